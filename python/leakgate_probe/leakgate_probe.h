/*
 * leakgate_probe.h - leak checkpoints for C and C++ programs run under
 * `leakgate run` (the C side of the Python module leakgate_probe).
 *
 *     #include "leakgate_probe.h"
 *     for (int i = 0; i < n; i++) {
 *         handle_request(i);
 *         leakgate_checkpoint("request");
 *     }
 *
 * leakgate_checkpoint(label) writes a marker into Valgrind's XML report
 * (like VALGRIND_PRINTF) and takes a leak snapshot right after it (like
 * VALGRIND_DO_CHANGED_LEAK_CHECK); leakgate_checkpoint_kind(label, "start")
 * takes a silent baseline instead (VALGRIND_DO_QUICK_LEAK_CHECK), so that
 * what exists before it is not listed. leakgate reports which checkpoint each
 * leak grew in, and whether it grows at every call. Self-contained: no
 * Valgrind headers needed (the client-request sequence of valgrind.h for
 * x86-64 and aarch64 is inlined; elsewhere the calls do nothing). Without
 * Valgrind the calls are no-ops.
 *
 * With Valgrind's headers the same marker can be written by hand:
 *     VALGRIND_PRINTF("leakgate-checkpoint {\"v\":1,\"kind\":\"checkpoint\",\"label\":\"%s\"}\n", label);
 *     VALGRIND_DO_CHANGED_LEAK_CHECK;
 * (the label must then be free of quotes, backslashes and control characters).
 */
#ifndef LEAKGATE_PROBE_H
#define LEAKGATE_PROBE_H

#include <stddef.h>

/* Issues Valgrind client request a[0] with arguments a[1..5]; returns
 * `dflt` when not running under Valgrind. */
static inline unsigned long leakgate_request(volatile unsigned long *a, unsigned long dflt)
{
#if defined(__x86_64__)
    unsigned long r;
    __asm__ volatile("rolq $3,  %%rdi ; rolq $13, %%rdi\n\t"
                     "rolq $61, %%rdi ; rolq $51, %%rdi\n\t"
                     "xchgq %%rbx,%%rbx"
                     : "=d"(r)
                     : "a"(&a[0]), "0"(dflt)
                     : "cc", "memory");
    return r;
#elif defined(__aarch64__)
    register unsigned long r __asm__("x3");
    __asm__ volatile("mov x3, %1\n\t"
                     "mov x4, %2\n\t"
                     "ror x12, x12, #3  ;  ror x12, x12, #13\n\t"
                     "ror x12, x12, #51 ;  ror x12, x12, #61\n\t"
                     "orr x10, x10, x10\n\t"
                     "mov %0, x3"
                     : "=r"(r)
                     : "r"(dflt), "r"(&a[0])
                     : "cc", "memory", "x3", "x4");
    return r;
#else
    (void)a;
    return dflt;
#endif
}

/* How many Valgrinds the program runs under (0: none). */
static inline unsigned long leakgate_running_on_valgrind(void)
{
    volatile unsigned long a[6] = {0x1001, 0, 0, 0, 0, 0};
    return leakgate_request(a, 0);
}

/* Writes the marker for `label` and takes a changed-blocks leak snapshot. */
static inline void leakgate_checkpoint_kind(const char *label, const char *kind)
{
    static const char hex[] = "0123456789abcdef";
    char buf[1400];
    size_t n = 0;
    const char *p;
    char va[64] = {0}; /* a va_list nobody reads: the format has no % */
    if (leakgate_running_on_valgrind() == 0)
        return;
#define LG_PUT(s)                                 \
    for (p = (s); *p && n < sizeof buf - 16; p++) \
        buf[n++] = *p;
    LG_PUT("leakgate-checkpoint {\"v\":1,\"kind\":\"");
    LG_PUT(kind);
    LG_PUT("\",\"label\":\"");
    for (p = label ? label : ""; *p && n < sizeof buf - 16; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' ||
            c == '&' || c == '%') {
            buf[n++] = '\\';
            buf[n++] = 'u';
            buf[n++] = '0';
            buf[n++] = '0';
            buf[n++] = hex[c >> 4];
            buf[n++] = hex[c & 15];
        } else {
            buf[n++] = (char)c;
        }
    }
    LG_PUT("\"}\n");
#undef LG_PUT
    buf[n] = 0;
    {
        volatile unsigned long pr[6] = {0x1403, (unsigned long)buf, (unsigned long)va, 0, 0, 0};
        /* "start": a silent baseline (summary leak check); else a
         * changed-blocks leak check listing what changed since. */
        int start = kind[0] == 's' && kind[1] == 't' && kind[2] == 'a';
        volatile unsigned long lc[6] = {((unsigned long)'M' << 24 | (unsigned long)'C' << 16) + 6,
                                        start ? 1UL : 0UL, start ? 0UL : 2UL, 0, 0, 0};
        leakgate_request(pr, 0);
        leakgate_request(lc, 0);
    }
}

static inline void leakgate_checkpoint(const char *label)
{
    leakgate_checkpoint_kind(label, "checkpoint");
}

#endif /* LEAKGATE_PROBE_H */
