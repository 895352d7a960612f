// Test helper: run a piece of a test in a child of fork(), bounded in time.
#ifndef KTIMER_TESTS_SUPPORT_FORK_CHILD_H
#define KTIMER_TESTS_SUPPORT_FORK_CHILD_H

#include <cerrno>

#include <sys/wait.h>
#include <unistd.h>

namespace kt_test {

// Starts `child` in a child of fork(). The child never returns into
// googletest: it _exit()s with what child() returned (0 for success, a
// number naming the check that failed), and an alarm ends it after
// `limit_s` seconds, so a child that hangs fails the test instead of
// hanging it. Returns the child's pid (-1 if fork() failed).
template <class F> pid_t StartChild(F child, unsigned limit_s = 10) {
	pid_t pid = fork();
	if (pid == 0) {
		alarm(limit_s);
		_exit(child());
	}
	return pid;
}

// The exit status of a child StartChild() started: what child() returned,
// or 128 + the signal that ended it (128 + SIGALRM: it hung); -1 on error.
inline int WaitChild(pid_t pid) {
	int st = 0;
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// StartChild() and WaitChild() in one: the child runs while the parent waits.
template <class F> int InChild(F child, unsigned limit_s = 10) { return WaitChild(StartChild(child, limit_s)); }

} // namespace kt_test

#endif
