/* An instruction Valgrind cannot run, in correct code: one AVX-512
 * (EVEX-encoded) add, or one SHA-NI round (a legacy 0F 38 encoding), each
 * in a function compiled for that extension only (the rest of the program
 * is plain x86-64). Valgrind 3.19-3.27 decode neither: they print "vex
 * amd64->IR: unhandled instruction bytes" and raise SIGILL, which kills
 * the process before it frees its buffers. Run natively on a CPU without
 * the extension it dies of SIGILL too; the tests run it under Valgrind only.
 *
 *   ./unhandled_insn [avx512]   AVX-512 (the default)
 *   ./unhandled_insn sha        SHA-NI
 *   ./unhandled_insn trap       __builtin_trap() (ud2): a real illegal
 *                               instruction, the program's own crash
 *   ./unhandled_insn error      an invalid read, then AVX-512
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline, target("avx512f"))) static int add16(const int *a, const int *b,
                                                             int *out) {
    __m512i x = _mm512_loadu_si512(a); /* @avx512 */
    __m512i y = _mm512_loadu_si512(b);
    _mm512_storeu_si512(out, _mm512_add_epi32(x, y));
    return out[3];
}

__attribute__((noinline, target("sha"))) static int sha_round(const int *a, const int *b) {
    __m128i x = _mm_loadu_si128((const __m128i *)a);
    __m128i y = _mm_loadu_si128((const __m128i *)b);
    __m128i r = _mm_sha256rnds2_epu32(x, y, x); /* @sha */
    return _mm_cvtsi128_si32(r);
}

__attribute__((noinline)) static void trap(void) {
    __builtin_trap(); /* @trap */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "avx512";
    int *a = malloc(16 * sizeof *a);
    int *b = malloc(16 * sizeof *b);
    int out[16];
    int r = 0;
    for (int i = 0; i < 16; i++) {
        a[i] = i;
        b[i] = 2 * i;
    }
    if (strcmp(mode, "sha") == 0) {
        r = sha_round(a, b);
    } else if (strcmp(mode, "trap") == 0) {
        trap();
    } else {
        if (strcmp(mode, "error") == 0)
            r = ((volatile int *)a)[16]; /* @invalid_read */
        r += add16(a, b, out);
    }
    printf("%d\n", r);
    free(a);
    free(b);
    return 0;
}
