// nbext: a nanobind extension with planted leaks, for tests/it/rust_ext.rs
// (markers and expected findings: ../README.md). Each function takes
// `fixed`: true runs the correct twin of the same code.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

struct Widget {
    double weights[12] = {};
    int size() const { return 12; }
};

// A raw `new[]` whose `delete[]` only the fixed twin reaches.
static int leak_new(bool fixed) {
    int *counts = new int[25]; /* @nb_new */
    counts[0] = 25;
    int n = counts[0];
    if (fixed)
        delete[] counts;
    return n;
}

// A new object returned with rv_policy::reference: Python never owns it,
// so nobody deletes it. The fixed twin hands it over (take_ownership).
static nb::object leak_widget(bool fixed) {
    Widget *w = new Widget(); /* @nb_widget */
    if (fixed)
        return nb::cast(w, nb::rv_policy::take_ownership);
    return nb::cast(w, nb::rv_policy::reference);
}

NB_MODULE(nbext, m) {
    nb::class_<Widget>(m, "Widget").def("size", &Widget::size);
    m.def("leak_new", &leak_new);
    m.def("leak_widget", &leak_widget);
}
