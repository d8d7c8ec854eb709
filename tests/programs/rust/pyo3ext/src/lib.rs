//! pyo3ext: a PyO3 extension with planted leaks, for tests/it/rust_ext.rs
//! (markers and expected findings: ../README.md). Every function takes
//! `fixed`: `true` runs the correct twin of the same code.

use std::ffi::c_void;

use pyo3::ffi;
use pyo3::prelude::*;

/// A scratch buffer made in a local macro: its code carries the line of the
/// macro body, unless the macro is `#[collapse_debuginfo(yes)]` (feature
/// `collapse`), which gives it the call site's line.
#[cfg_attr(feature = "collapse", collapse_debuginfo(yes))]
macro_rules! scratch {
    ($n:expr) => {
        Box::into_raw(vec![0u8; $n].into_boxed_slice()) // @pyo3_macro_body
    };
}

/// The capsule's destructor of the fixed twin: takes the box back.
unsafe extern "C" fn free_box(capsule: *mut ffi::PyObject) {
    let p = ffi::PyCapsule_GetPointer(capsule, c"pyo3ext.box".as_ptr());
    drop(Box::from_raw(p.cast::<[u64; 6]>()));
}

/// A `Box` handed to C in a capsule without a destructor: nobody frees it.
#[pyfunction]
fn leak_box(fixed: bool) -> PyResult<u64> {
    let data = Box::new([7u64; 6]); // @pyo3_box
    let sum = data.iter().sum();
    let raw = Box::into_raw(data).cast::<c_void>();
    let destructor: Option<ffi::PyCapsule_Destructor> = if fixed { Some(free_box) } else { None };
    unsafe {
        let capsule = ffi::PyCapsule_New(raw, c"pyo3ext.box".as_ptr(), destructor);
        ffi::Py_DECREF(capsule);
    }
    Ok(sum)
}

/// A `Vec` leaked (`Vec::leak`) for a memoryview, which does not own its memory.
#[pyfunction]
fn leak_vec(fixed: bool) -> PyResult<usize> {
    let mut v = vec![1u8; 72]; // @pyo3_vec
    let len = v.len();
    unsafe {
        let view = if fixed {
            ffi::PyMemoryView_FromMemory(
                v.as_mut_ptr().cast(),
                len as ffi::Py_ssize_t,
                ffi::PyBUF_READ,
            )
        } else {
            let leaked: &'static mut [u8] = v.leak();
            ffi::PyMemoryView_FromMemory(
                leaked.as_mut_ptr().cast(),
                len as ffi::Py_ssize_t,
                ffi::PyBUF_READ,
            )
        };
        ffi::Py_DECREF(view);
    }
    Ok(len)
}

/// A new reference from the C API never released (no `Py_DECREF`).
#[pyfunction]
fn leak_ref(fixed: bool) -> PyResult<isize> {
    let payload = [3u8; 200];
    unsafe {
        let bytes = ffi::PyBytes_FromStringAndSize(payload.as_ptr().cast(), 200); // @pyo3_ref
        let n = ffi::PyObject_Length(bytes);
        if fixed {
            ffi::Py_DECREF(bytes);
        }
        Ok(n)
    }
}

fn might_panic(n: usize) -> usize {
    if n > 2 {
        panic!("pyo3ext: too big ({n})");
    }
    n
}

/// A raw pointer's block, freed after a call that panics: the panic, caught
/// by `catch_unwind`, skips the free. The fixed twin keeps the `Box`, which
/// unwinding drops.
#[pyfunction]
fn leak_unwind(fixed: bool) -> PyResult<bool> {
    let caught = std::panic::catch_unwind(|| {
        if fixed {
            let owned = Box::new([5u32; 10]);
            might_panic(owned.len())
        } else {
            let raw = Box::into_raw(Box::new([5u32; 10])); // @pyo3_unwind
            let n = might_panic(unsafe { (&*raw).len() });
            drop(unsafe { Box::from_raw(raw) });
            n
        }
    });
    Ok(caught.is_err())
}

/// A scratch buffer from the local macro, never freed.
#[pyfunction]
fn leak_macro(fixed: bool) -> PyResult<usize> {
    let raw = scratch!(40); // @pyo3_macro_call
    let n = unsafe { (&*raw).len() };
    if fixed {
        drop(unsafe { Box::from_raw(raw) });
    }
    Ok(n)
}

#[pymodule]
fn pyo3ext(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(leak_box, m)?)?;
    m.add_function(wrap_pyfunction!(leak_vec, m)?)?;
    m.add_function(wrap_pyfunction!(leak_ref, m)?)?;
    m.add_function(wrap_pyfunction!(leak_unwind, m)?)?;
    m.add_function(wrap_pyfunction!(leak_macro, m)?)?;
    Ok(())
}
