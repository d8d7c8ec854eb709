/* cuda_ipc_warning.c - leakgate test program: a forked child prints
 * PyTorch's CUDA-IPC producer warning on stderr, exactly as torch does
 * (prefix included), then exits; the parent waits and exits 0. No GPU. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    pid_t c = fork();
    if (c == 0) {
        fprintf(stderr, "[W CudaIPCTypes.cpp:16] Producer process has been terminated "
                        "before all shared CUDA tensors released. See Note [Sharing CUDA tensors]\n");
        fflush(stderr);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    printf("producer child %d done\n", (int)c);
    return 0;
}
