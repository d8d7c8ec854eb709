/* oom_kill.c - leakgate test program: the process leaks 16 bytes and
 * reports an invalid read, then is killed with SIGKILL by a helper child
 * (as the OOM killer would): Valgrind gets no chance to finish, so its XML
 * is cut off after the invalid read. (Under Valgrind a kill(getpid(),
 * SIGKILL) of a process by itself is intercepted and ends cleanly, hence
 * the helper.) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int g_sink;

int main(void)
{
    int *a = malloc(4 * sizeof(int));
    g_sink = a[4]; /* @oob_read */
    free(a);
    char *leak = malloc(16);
    leak[0] = 1;
    leak = NULL;
    pid_t helper = fork();
    if (helper == 0) {
        kill(getppid(), SIGKILL);
        _exit(0);
    }
    for (;;)
        pause();
}
