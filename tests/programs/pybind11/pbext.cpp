/*
 * pbext.cpp - leakgate test program: pybind11 extension module `pbext` with
 * deliberate C++ leaks and a mismatched delete.
 *
 * Build: python3 setup.py build_ext --inplace   (needs pybind11; -O0 -g)
 * Faulty lines carry a trailing marker comment (an `@` followed by a name,
 * each appearing exactly once); see tests/programs/README.md.
 *   leak_new_array()     new int[100] dropped                -> definitely lost
 *   make_holder()        Holder's destructor forgets its
 *                        new double[8] member                 -> definitely lost
 *   throw_path_leak()    new char[64], then throws
 *                        std::runtime_error before delete[]   -> definitely lost
 *   mismatched_delete()  new int[4] released with delete      -> MismatchedFree
 */
#include <pybind11/pybind11.h>

#include <cstring>
#include <stdexcept>

namespace py = pybind11;

static volatile int g_sink;

class Holder {
public:
    Holder()
    {
        data = new double[8]; /* @pb_dtor_member */
        for (int i = 0; i < 8; i++)
            data[i] = i;
    }
    ~Holder()
    {
        // Bug: missing delete[] data;
        data = nullptr;
    }
    double first() const { return data[0]; }

private:
    double *data;
};

__attribute__((noinline)) void leak_new_array()
{
    int *a = new int[100]; /* @pb_new_array */
    a[0] = 1;
    g_sink = a[0];
    a = nullptr;
}

__attribute__((noinline)) void make_holder()
{
    Holder *h = new Holder();
    g_sink = static_cast<int>(h->first());
    delete h;
}

__attribute__((noinline)) void throw_path_leak()
{
    char *buf = new char[64]; /* @pb_throw_path */
    std::memset(buf, 't', 64);
    g_sink = buf[0];
    buf = nullptr;
    throw std::runtime_error("throw_path_leak: bailing out before delete[]");
}

__attribute__((noinline)) void mismatched_delete()
{
    int *a = new int[4];
    a[0] = 4;
    g_sink = a[0];
    delete a; /* @pb_mismatched */
}

PYBIND11_MODULE(pbext, m)
{
    m.doc() = "leakgate test extension (pybind11) with deliberate leaks";
    m.def("leak_new_array", &leak_new_array, "new int[100] and drop it");
    m.def("make_holder", &make_holder, "create and destroy a Holder whose dtor leaks");
    m.def("throw_path_leak", &throw_path_leak, "allocate, then throw before freeing");
    m.def("mismatched_delete", &mismatched_delete, "new[] released with scalar delete");
}
