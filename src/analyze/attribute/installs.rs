//! What an install records of where an object came from: an extension that
//! pip installed into `site-packages` from a local checkout is the user's
//! when that checkout is one of the user's source roots, even when its
//! build compiled it in a temporary copy of the tree that is gone (a PEP 517
//! backend that builds out of tree: the debug info then names sources that
//! no longer exist, and only the install says whose the object is).
//!
//! pip writes `NAME.dist-info/direct_url.json` for a local install
//! (`{"url": "file:///path/to/checkout", "dir_info": {...}}`, editable or
//! not) and `NAME.dist-info/RECORD`, one installed file per line
//! (`pkg/_ext.cpython-311-x86_64-linux-gnu.so,sha256=...,12345`).

use std::path::{Path, PathBuf};

/// The checkout an installed object was built from, when pip recorded a
/// local source (`direct_url.json`) for the distribution whose `RECORD`
/// lists it. `obj` is the object's absolute path.
pub fn installed_from(obj: &str) -> Option<PathBuf> {
    let (site, rel) = split_site(obj)?;
    let entries = std::fs::read_dir(site).ok()?;
    for e in entries.flatten() {
        let dist = e.path();
        if !dist
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".dist-info"))
        {
            continue;
        }
        let Ok(record) = std::fs::read_to_string(dist.join("RECORD")) else {
            continue;
        };
        if !record.lines().any(|l| record_path(l) == Some(rel)) {
            continue;
        }
        let url = std::fs::read_to_string(dist.join("direct_url.json")).ok()?;
        return local_source(&url);
    }
    None
}

/// `/venv/lib/python3.11/site-packages/pkg/_ext.so` → (the `site-packages`
/// directory, `pkg/_ext.so`).
fn split_site(obj: &str) -> Option<(&Path, &str)> {
    for name in ["/site-packages/", "/dist-packages/"] {
        if let Some(i) = obj.rfind(name) {
            let site = &obj[..i + name.len() - 1];
            return Some((Path::new(site), &obj[i + name.len()..]));
        }
    }
    None
}

/// The installed path of a `RECORD` line (its first CSV field, which pip
/// quotes when it holds a comma).
fn record_path(line: &str) -> Option<&str> {
    let line = line.trim_end();
    if let Some(rest) = line.strip_prefix('"') {
        return rest.split_once('"').map(|(p, _)| p);
    }
    let p = line.split(',').next()?;
    (!p.is_empty()).then_some(p)
}

/// The local directory of a `direct_url.json` (`file://` URLs only; a VCS
/// or archive URL names no checkout on this machine).
fn local_source(json: &str) -> Option<PathBuf> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let url = v.get("url")?.as_str()?;
    let path = url.strip_prefix("file://")?;
    // `file://localhost/path` is the same as `file:///path`.
    let path = path.strip_prefix("localhost").unwrap_or(path);
    // An archive (`archive_info`) or a VCS URL names no checkout.
    v.get("dir_info")?;
    Some(PathBuf::from(percent_decode(path)))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(hex, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_installed_from_a_local_checkout_names_it() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("venv/lib/python3.11/site-packages");
        let dist = site.join("leaky_ext-1.0.dist-info");
        std::fs::create_dir_all(site.join("leaky")).unwrap();
        std::fs::create_dir_all(&dist).unwrap();
        let so = site.join("leaky/_ext.cpython-311-x86_64-linux-gnu.so");
        std::fs::write(&so, b"").unwrap();
        std::fs::write(
            dist.join("RECORD"),
            "leaky/__init__.py,sha256=x,0\nleaky/_ext.cpython-311-x86_64-linux-gnu.so,sha256=y,0\nleaky_ext-1.0.dist-info/RECORD,,\n",
        )
        .unwrap();
        std::fs::write(
            dist.join("direct_url.json"),
            r#"{"dir_info": {}, "url": "file:///home/me/my%20ext"}"#,
        )
        .unwrap();
        assert_eq!(
            installed_from(so.to_str().unwrap()),
            Some(PathBuf::from("/home/me/my ext"))
        );
        // Installed from an index: no direct_url.json.
        std::fs::remove_file(dist.join("direct_url.json")).unwrap();
        assert_eq!(installed_from(so.to_str().unwrap()), None);
        // An archive URL names no checkout.
        std::fs::write(
            dist.join("direct_url.json"),
            r#"{"archive_info": {}, "url": "file:///tmp/leaky_ext-1.0.tar.gz"}"#,
        )
        .unwrap();
        assert_eq!(installed_from(so.to_str().unwrap()), None);
        // Not listed in any RECORD.
        assert_eq!(
            installed_from(site.join("other/_x.so").to_str().unwrap()),
            None
        );
        assert_eq!(installed_from("/usr/lib/libfoo.so"), None);
    }

    #[test]
    fn record_lines() {
        assert_eq!(record_path("a/b.so,sha256=x,1"), Some("a/b.so"));
        assert_eq!(record_path("\"a,b/c.so\",sha256=x,1"), Some("a,b/c.so"));
        assert_eq!(record_path(""), None);
    }
}
