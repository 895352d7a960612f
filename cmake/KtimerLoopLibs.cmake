# cmake/KtimerLoopLibs.cmake - find the event-loop libraries the adapters
# drive (libuv, libevent's core, liburing), as imported targets
# ktimer::loop_uv, ktimer::loop_event, ktimer::loop_uring.
#
# Used twice: by the build (an adapter is built when its loop library is
# found) and by the installed ktimerConfig.cmake (an installed adapter's
# users need the same library). Plain find_path()/find_library(), so no
# pkg-config and no package of the loop library's own is needed; the cache
# variables KTIMER_<X>_INCLUDE_DIR and KTIMER_<X>_LIBRARY override the search.

# ktimer_find_loop_library(X HEADER LIBNAME OUT): OUT is TRUE and
# ktimer::loop_X exists when both HEADER and libLIBNAME are found.
function(ktimer_find_loop_library x header libname out)
	string(TOUPPER "${x}" X)
	if(TARGET ktimer::loop_${x})
		set(${out} TRUE PARENT_SCOPE)
		return()
	endif()
	find_path(KTIMER_${X}_INCLUDE_DIR NAMES ${header}
		DOC "Where <${header}> is (ktimer's ${x} adapter)")
	find_library(KTIMER_${X}_LIBRARY NAMES ${libname}
		DOC "lib${libname} (ktimer's ${x} adapter)")
	mark_as_advanced(KTIMER_${X}_INCLUDE_DIR KTIMER_${X}_LIBRARY)
	# Checked, not just set: a path given on the command line may be wrong.
	if(KTIMER_${X}_INCLUDE_DIR AND KTIMER_${X}_LIBRARY AND EXISTS "${KTIMER_${X}_INCLUDE_DIR}/${header}"
	   AND EXISTS "${KTIMER_${X}_LIBRARY}")
		# GLOBAL: an adapter target defined in a subdirectory
		# (add_subdirectory) links it in its users' scope too.
		add_library(ktimer::loop_${x} INTERFACE IMPORTED GLOBAL)
		set_target_properties(ktimer::loop_${x} PROPERTIES
			INTERFACE_INCLUDE_DIRECTORIES "${KTIMER_${X}_INCLUDE_DIR}"
			INTERFACE_LINK_LIBRARIES "${KTIMER_${X}_LIBRARY}")
		set(${out} TRUE PARENT_SCOPE)
	else()
		set(${out} FALSE PARENT_SCOPE)
	endif()
endfunction()

# The adapters: name, header, library.
set(KTIMER_LOOP_ADAPTERS uv event uring)
set(KTIMER_LOOP_uv_HEADER uv.h)
set(KTIMER_LOOP_uv_LIB uv)
set(KTIMER_LOOP_uv_PC libuv)
set(KTIMER_LOOP_event_HEADER event2/event.h)
set(KTIMER_LOOP_event_LIB event_core)
set(KTIMER_LOOP_event_PC libevent_core)
set(KTIMER_LOOP_uring_HEADER liburing.h)
set(KTIMER_LOOP_uring_LIB uring)
set(KTIMER_LOOP_uring_PC liburing)
