//! `leakgate report JSON`: a saved JSON report rendered again. The gate
//! marks the JSON leaves out (`fails`) come back from `gate::restore`.

use anyhow::{Context, Result, bail};

use super::config::canonical_roots;
use super::outputs::{use_color, write_or_print};
use crate::cli::ReportFormat;
use crate::gate;
use crate::render;
use crate::report::{Report, SCHEMA_VERSION};

/// `leakgate report JSON`: renders a saved JSON report again (HTML, text or
/// JSON). Exits 0 when it could; the report's own verdict is in the output.
pub(super) fn report(a: crate::cli::ReportFileArgs) -> Result<i32> {
    let report = read_report(&a.input)?;
    let roots = canonical_roots(&a.src_roots)?;
    let html_opts = render::html::HtmlOptions {
        src_roots: roots,
        ..Default::default()
    };
    if let Some(path) = &a.html {
        std::fs::write(path, render::html::render(&report, &html_opts))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let html_name = a.output.as_ref().is_some_and(|p| {
        p.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
    });
    let text = match a.format {
        ReportFormat::Html => render::html::render(&report, &html_opts),
        ReportFormat::Auto if html_name => render::html::render(&report, &html_opts),
        ReportFormat::Json => render::json::render(&report),
        ReportFormat::Text | ReportFormat::Auto => render::text::render(
            &report,
            render::text::TextOptions {
                color: use_color(a.color, a.output.is_none()),
                verbose: a.verbose,
            },
        ),
    };
    write_or_print(a.output.as_deref(), &text).map_err(anyhow::Error::msg)?;
    Ok(crate::exit::PASS)
}

/// Reads a saved JSON report (`-` for standard input), with the gate's
/// marks back (`gate::restore`).
pub(super) fn read_report(input: &std::path::Path) -> Result<Report> {
    // A saved report is a few MB; an endless input (/dev/zero) is refused.
    const MAX_REPORT: u64 = 1 << 30;
    use std::io::Read;
    let mut bytes = Vec::new();
    if input.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_REPORT + 1)
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
    } else {
        std::fs::File::open(input)
            .and_then(|f| f.take(MAX_REPORT + 1).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read {}", input.display()))?;
    }
    if bytes.len() as u64 > MAX_REPORT {
        bail!(
            "{}: larger than 1 GiB, not a leakgate JSON report",
            input.display()
        );
    }
    let mut report: Report = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a leakgate JSON report", input.display()))?;
    gate::restore(&mut report);
    if report.schema_version > SCHEMA_VERSION {
        bail!(
            "{}: schema_version {} is newer than this leakgate reads ({SCHEMA_VERSION})",
            input.display(),
            report.schema_version
        );
    }
    Ok(report)
}
