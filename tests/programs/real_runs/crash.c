/* crash.c - leakgate test program: leaks 32 bytes, then segfaults in user
 * code (a write through a NULL pointer) -> a FatalSignal (SIGSEGV) finding
 * at the marked line, plus the leak; the target is killed by SIGSEGV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *volatile g_keep;

static __attribute__((noinline)) void crash(int *volatile p)
{
    *p = 42; /* @segv */
}

int main(void)
{
    char *leak = malloc(32); /* @crash_leak */
    memset(leak, 'x', 32);
    leak = NULL;
    fputs("crash: about to crash\n", stderr);
    crash(NULL);
    return 0;
}
