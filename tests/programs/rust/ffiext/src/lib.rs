//! ffiext: a raw pyo3-ffi extension (no PyO3 macros) with planted leaks, for
//! tests/it/rust_ext.rs (markers and expected findings: ../README.md). Each
//! function takes one argument, `fixed`: `True` runs the correct twin.
//! `PyInit_ffiext` allocates its `PyModuleDef` with `Box::into_raw`, as
//! real raw extensions do: it lives as long as the process.

use std::ffi::c_void;
use std::ptr;

use pyo3_ffi::*;

/// A scratch buffer made in a local macro: its code carries the line of the
/// macro body, unless the macro is `#[collapse_debuginfo(yes)]` (feature
/// `collapse`), which gives it the call site's line.
#[cfg_attr(feature = "collapse", collapse_debuginfo(yes))]
macro_rules! scratch {
    ($n:expr) => {
        Box::into_raw(vec![0u8; $n].into_boxed_slice()) // @ffi_macro_body
    };
}

unsafe fn is_fixed(arg: *mut PyObject) -> bool {
    PyObject_IsTrue(arg) == 1
}

unsafe extern "C" fn free_box(capsule: *mut PyObject) {
    let p = PyCapsule_GetPointer(capsule, c"ffiext.box".as_ptr());
    drop(Box::from_raw(p.cast::<[u64; 6]>()));
}

/// A `Box` handed to C in a capsule without a destructor: nobody frees it.
unsafe extern "C" fn leak_box(_m: *mut PyObject, arg: *mut PyObject) -> *mut PyObject {
    let data = Box::new([9u64; 6]); // @ffi_box
    let raw = Box::into_raw(data).cast::<c_void>();
    let destructor: Option<PyCapsule_Destructor> =
        if is_fixed(arg) { Some(free_box) } else { None };
    let capsule = PyCapsule_New(raw, c"ffiext.box".as_ptr(), destructor);
    Py_DECREF(capsule);
    PyLong_FromLong(6)
}

/// A `Vec` given up with `mem::forget`; its pointer goes to a memoryview,
/// which does not own its memory.
unsafe extern "C" fn leak_vec(_m: *mut PyObject, arg: *mut PyObject) -> *mut PyObject {
    let mut v = vec![2u8; 88]; // @ffi_vec
    let len = v.len() as Py_ssize_t;
    let view = PyMemoryView_FromMemory(v.as_mut_ptr().cast(), len, PyBUF_READ);
    if !is_fixed(arg) {
        std::mem::forget(v);
    }
    Py_DECREF(view);
    PyLong_FromSsize_t(len)
}

/// A new reference from the C API never released (no `Py_DECREF`).
unsafe extern "C" fn leak_ref(_m: *mut PyObject, arg: *mut PyObject) -> *mut PyObject {
    let payload = [4u8; 240];
    let bytes = PyBytes_FromStringAndSize(payload.as_ptr().cast(), 240); // @ffi_ref
    let n = PyObject_Length(bytes);
    if is_fixed(arg) {
        Py_DECREF(bytes);
    }
    PyLong_FromSsize_t(n)
}

fn might_panic(n: usize) -> usize {
    if n > 2 {
        panic!("ffiext: too big ({n})");
    }
    n
}

/// A raw pointer's block, freed after a call that panics under
/// `catch_unwind` (no panic may cross `extern "C"`): the free is skipped.
unsafe extern "C" fn leak_unwind(_m: *mut PyObject, arg: *mut PyObject) -> *mut PyObject {
    let fixed = is_fixed(arg);
    let caught = std::panic::catch_unwind(|| {
        if fixed {
            let owned = Box::new([6u32; 12]);
            might_panic(owned.len())
        } else {
            let raw = Box::into_raw(Box::new([6u32; 12])); // @ffi_unwind
            let n = might_panic((&*raw).len());
            drop(Box::from_raw(raw));
            n
        }
    });
    PyBool_FromLong(caught.is_err() as std::ffi::c_long)
}

/// A scratch buffer from the local macro, never freed.
unsafe extern "C" fn leak_macro(_m: *mut PyObject, arg: *mut PyObject) -> *mut PyObject {
    let raw = scratch!(56); // @ffi_macro_call
    let n = (&*raw).len();
    if is_fixed(arg) {
        drop(Box::from_raw(raw));
    }
    PyLong_FromSsize_t(n as Py_ssize_t)
}

const fn method(name: &'static std::ffi::CStr, f: PyCFunction) -> PyMethodDef {
    PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: PyMethodDefPointer { PyCFunction: f },
        ml_flags: METH_O,
        ml_doc: ptr::null(),
    }
}

static mut METHODS: [PyMethodDef; 6] = [
    method(c"leak_box", leak_box),
    method(c"leak_vec", leak_vec),
    method(c"leak_ref", leak_ref),
    method(c"leak_unwind", leak_unwind),
    method(c"leak_macro", leak_macro),
    PyMethodDef::zeroed(),
];

#[allow(non_snake_case)]
#[no_mangle]
pub unsafe extern "C" fn PyInit_ffiext() -> *mut PyObject {
    let def = Box::into_raw(Box::new(PyModuleDef {
        m_base: PyModuleDef_HEAD_INIT,
        m_name: c"ffiext".as_ptr(),
        m_doc: ptr::null(),
        m_size: 0,
        m_methods: (&raw mut METHODS).cast(),
        m_slots: ptr::null_mut(),
        m_traverse: None,
        m_clear: None,
        m_free: None,
    }));
    PyModule_Create(def)
}
