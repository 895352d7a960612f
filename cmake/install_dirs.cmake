# cmake/install_dirs.cmake - run by the install script before it installs
# anything (CMakeLists.txt's first install rule): records the directories
# the install creates, for the uninstall target (cmake/uninstall.cmake.in).
#
# ktimer_record_install_dirs(SCRIPT LIST): every DESTINATION of the
# install script SCRIPT (cmake_install.cmake) and each of its parents that
# does not exist under $DESTDIR yet is appended to LIST, as a path without
# $DESTDIR (as install_manifest.txt has them). Entries of an earlier install
# that still exist are kept, so a second install over the first does not
# forget what the first created.
function(ktimer_record_install_dirs script list)
	file(STRINGS "${script}" lines REGEX "file\\(INSTALL DESTINATION \"")
	set(dests)
	foreach(line IN LISTS lines)
		if(line MATCHES "file\\(INSTALL DESTINATION \"([^\"]*)\"")
			string(REPLACE "\${CMAKE_INSTALL_PREFIX}" "${CMAKE_INSTALL_PREFIX}" d "${CMAKE_MATCH_1}")
			list(APPEND dests "${d}")
		endif()
	endforeach()
	list(REMOVE_DUPLICATES dests)
	set(created)
	if(EXISTS "${list}")
		file(STRINGS "${list}" old)
		foreach(d IN LISTS old)
			if(IS_DIRECTORY "$ENV{DESTDIR}${d}")
				list(APPEND created "${d}")
			endif()
		endforeach()
	endif()
	foreach(d IN LISTS dests)
		cmake_path(NORMAL_PATH d)
		string(REGEX REPLACE "/+$" "" d "${d}")
		while(d AND NOT d STREQUAL "/" AND NOT IS_DIRECTORY "$ENV{DESTDIR}${d}")
			list(APPEND created "${d}")
			get_filename_component(d "${d}" DIRECTORY)
		endwhile()
	endforeach()
	list(REMOVE_DUPLICATES created)
	list(JOIN created "\n" text)
	file(WRITE "${list}" "${text}\n")
endfunction()
