/* sleeper.c - leakgate test program: leaks 24 bytes, prints "sleeper:
 * ready" on stderr, then sleeps for an hour (for --timeout and Ctrl-C).
 * Default signal dispositions: SIGTERM/SIGINT end it with Valgrind's leak
 * check still run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char *leak = malloc(24); /* @sleep_leak */
    memset(leak, 's', 24);
    leak = NULL;
    fputs("sleeper: ready\n", stderr);
    sleep(3600);
    return 0;
}
