//! The curated suppression files shipped inside the binary (from
//! `suppressions/`), for `leakgate suppressions list|show` and for matching.

/// (file name, contents), in load order.
pub const BUNDLED: &[(&str, &str)] = &[
    ("glibc.supp", include_str!("../../suppressions/glibc.supp")),
    (
        "python.supp",
        include_str!("../../suppressions/python.supp"),
    ),
    (
        "pybind11.supp",
        include_str!("../../suppressions/pybind11.supp"),
    ),
    ("torch.supp", include_str!("../../suppressions/torch.supp")),
    ("cuda.supp", include_str!("../../suppressions/cuda.supp")),
];

/// A bundled file by name (`cuda` or `cuda.supp`).
pub fn get(name: &str) -> Option<&'static str> {
    BUNDLED
        .iter()
        .find(|(n, _)| *n == name || n.strip_suffix(".supp") == Some(name))
        .map(|(_, t)| *t)
}
