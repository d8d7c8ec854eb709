//! Project configuration: `[tool.leakgate]` in `pyproject.toml`, or a
//! `leakgate.toml` (`.leakgate.toml`) for projects without one, found from
//! the current directory upwards as ruff and pytest find theirs.
//!
//! Every key is the name of a long option of `run`/`analyze` and takes the
//! same values (`fail-on = "definite,errors"`, `repeat = 3`,
//! `timeout = "10m"`); an option's `--no-…` form is the key set to `false`
//! (`per-test = false`, `bundled-suppressions = false`). Paths are relative
//! to the file's directory. An option given on the command line wins over the
//! file. Unknown keys, wrong types and bad values are errors with
//! `file:line` (exit 2), before anything runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use clap::parser::{ArgMatches, ValueSource};
use serde::Deserialize;
use toml::Spanned;

use crate::cli::{
    AnalyzeArgs, AnnotationsChoice, ColorChoice, Format, MergeArgs, Origins, ReportArgs, RunArgs,
    SuppressArgs,
};
use crate::gate::policy::FailOn;
use crate::run::Engine;

/// The standalone file names, in the order they are looked for in each
/// directory (before `pyproject.toml`).
pub(crate) const STANDALONE: [&str; 2] = ["leakgate.toml", ".leakgate.toml"];

/// A configuration file that cannot be used: one line, with `file:line`
/// where the problem has a place.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}: {message}")]
    At {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    File { file: String, message: String },
}

/// The configuration file in use and what it sets (validated).
#[derive(Debug, Clone)]
pub struct ProjectConfig {
    /// The file.
    pub path: PathBuf,
    /// True for `pyproject.toml` (the `[tool.leakgate]` table).
    pub pyproject: bool,
    pub settings: Settings,
}

impl ProjectConfig {
    /// `pyproject.toml [tool.leakgate]` or the file name, for messages.
    pub fn describe(&self) -> String {
        if self.pyproject {
            format!("{} [tool.leakgate]", self.path.display())
        } else {
            self.path.display().to_string()
        }
    }
}

/// What a configuration file sets; `None` leaves the option to the
/// command line (or its default).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub src_roots: Option<Vec<PathBuf>>,
    pub user_objects: Option<Vec<String>>,
    pub suppressions: Option<Vec<PathBuf>>,
    pub bundled_suppressions: Option<bool>,
    pub show_unused_suppressions: Option<bool>,
    pub format: Option<Format>,
    pub output: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub color: Option<ColorChoice>,
    pub fail_on: Option<FailOn>,
    pub max_leaked_bytes: Option<u64>,
    pub fail_on_incomplete: Option<bool>,
    pub baseline: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub sarif: Option<PathBuf>,
    pub codequality: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub annotations: Option<AnnotationsChoice>,
    pub repo_root: Option<PathBuf>,
    pub valgrind: Option<PathBuf>,
    pub engine: Option<Engine>,
    pub sanitizer_runtime: Option<PathBuf>,
    pub num_callers: Option<u32>,
    pub show_leak_kinds: Option<String>,
    pub per_test: Option<bool>,
    pub repeat: Option<u32>,
    pub origins: Option<Origins>,
    pub track_fds: Option<bool>,
    pub valgrind_args: Option<Vec<String>>,
    pub keep_xml: Option<PathBuf>,
    pub ignore_target_exit: Option<bool>,
    pub trace_children: Option<bool>,
    pub trace_children_skip: Option<String>,
    pub timeout: Option<Duration>,
    pub kill_after: Option<Duration>,
}

/// A string, or an array of strings (`suppressions = "a.supp"` or
/// `suppressions = ["a.supp", "b.supp"]`).
#[derive(Debug)]
struct List(Vec<String>);

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = List;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<List, E> {
                Ok(List(vec![s.to_string()]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<List, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                Ok(List(v))
            }
        }
        d.deserialize_any(V)
    }
}

type S<T> = Option<Spanned<T>>;

/// The table as written: every key of [`Settings`], kebab-case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Raw {
    src_roots: S<List>,
    user_objects: S<List>,
    suppressions: S<List>,
    bundled_suppressions: S<bool>,
    show_unused_suppressions: S<bool>,
    format: S<String>,
    output: S<String>,
    html: S<String>,
    color: S<String>,
    fail_on: S<List>,
    max_leaked_bytes: S<u64>,
    fail_on_incomplete: S<bool>,
    baseline: S<String>,
    junit: S<String>,
    sarif: S<String>,
    codequality: S<String>,
    markdown: S<String>,
    annotations: S<String>,
    repo_root: S<String>,
    valgrind: S<String>,
    engine: S<String>,
    sanitizer_runtime: S<String>,
    num_callers: S<u32>,
    show_leak_kinds: S<List>,
    per_test: S<bool>,
    repeat: S<u32>,
    origins: S<String>,
    track_fds: S<bool>,
    valgrind_args: S<List>,
    keep_xml: S<String>,
    ignore_target_exit: S<bool>,
    trace_children: S<bool>,
    trace_children_skip: S<List>,
    timeout: S<String>,
    kill_after: S<String>,
}

#[derive(Deserialize)]
struct Pyproject {
    tool: Option<Tools>,
}

#[derive(Deserialize)]
struct Tools {
    leakgate: Option<Spanned<Raw>>,
}

/// Where `offset` is in `text`: its 1-based line.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// serde's "unknown field `x`, expected one of `a`, `b`": the key and the
/// known keys.
fn unknown_key(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let known = rest.split('`').skip(1).step_by(2).collect();
    Some((key, known))
}

/// The known key `key` was probably meant to be: the same with `-` for
/// `_` or in another case, or one within two edits.
fn suggest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let norm = key.replace('_', "-").to_ascii_lowercase();
    if let Some(k) = known.iter().find(|k| **k == norm) {
        return Some(k);
    }
    known
        .iter()
        .map(|k| (edit_distance(&norm, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// One file being read: its name for messages, its text, its directory.
struct Source<'a> {
    file: String,
    text: &'a str,
    dir: &'a Path,
}

impl Source<'_> {
    fn at(&self, offset: usize, message: impl Into<String>) -> ConfigError {
        ConfigError::At {
            file: self.file.clone(),
            line: line_of(self.text, offset),
            message: message.into(),
        }
    }

    /// A TOML or type error, on one line: an unknown key says which key
    /// was probably meant; a wrong type names its key.
    fn toml_error(&self, e: toml::de::Error) -> ConfigError {
        let message = e.message().trim().replace('\n', " ");
        let message = match unknown_key(&message) {
            Some((key, known)) => {
                let hint = suggest(key, &known)
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                format!(
                    "unknown key `{key}`{hint}; the keys are the long options of `leakgate run`: {}",
                    known.join(", ")
                )
            }
            None => match e.span().and_then(|s| self.key_at(s.start)) {
                Some(key) if message.starts_with("invalid type") => format!("{key}: {message}"),
                _ => message,
            },
        };
        match e.span() {
            Some(span) => self.at(span.start, message),
            None => ConfigError::File {
                file: self.file.clone(),
                message,
            },
        }
    }

    /// The key of the `key = value` line holding `offset`.
    fn key_at(&self, offset: usize) -> Option<String> {
        let start = self.text[..offset.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next()?;
        let (key, _) = line.split_once('=')?;
        let key = key.trim().trim_matches('"');
        (!key.is_empty() && !key.starts_with('[')).then(|| key.to_string())
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }
}

/// Reads the configuration in `path`: a `pyproject.toml` (its
/// `[tool.leakgate]` table; `Ok(None)` when it has none) or a standalone
/// file (the whole file is the table).
pub fn load_file(path: &Path) -> Result<Option<ProjectConfig>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
        file: path.display().to_string(),
        message: format!("cannot read the configuration: {e}"),
    })?;
    parse(path, &text)
}

/// [`load_file`] of text already read.
pub fn parse(path: &Path, text: &str) -> Result<Option<ProjectConfig>, ConfigError> {
    let pyproject = path.file_name().is_some_and(|n| n == "pyproject.toml");
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let src = Source {
        file: path.display().to_string(),
        text,
        dir,
    };
    let raw = if pyproject {
        let doc: Pyproject = toml::from_str(text).map_err(|e| src.toml_error(e))?;
        match doc.tool.and_then(|t| t.leakgate) {
            Some(t) => t.into_inner(),
            None => return Ok(None),
        }
    } else {
        toml::from_str::<Raw>(text).map_err(|e| src.toml_error(e))?
    };
    let settings = validate(&src, raw)?;
    Ok(Some(ProjectConfig {
        path: path.to_path_buf(),
        pyproject,
        settings,
    }))
}

/// The configuration that applies in `start`: in `start` and then each
/// directory above it, `leakgate.toml`, `.leakgate.toml`, then a
/// `pyproject.toml` with a `[tool.leakgate]` table; the first found wins.
/// A `pyproject.toml` without one (or without the word at all, which is
/// not parsed) is passed over.
pub fn discover(start: &Path) -> Result<Option<ProjectConfig>, ConfigError> {
    for dir in start.ancestors() {
        for name in STANDALONE {
            let p = dir.join(name);
            if p.is_file() {
                return load_file(&p);
            }
        }
        let p = dir.join("pyproject.toml");
        if p.is_file() {
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            if !text.contains("leakgate") {
                continue;
            }
            if let Some(c) = parse(&p, &text)? {
                return Ok(Some(c));
            }
        }
    }
    Ok(None)
}

/// `--config FILE` / `--no-config` / discovery from the current directory.
pub fn resolve(
    explicit: Option<&Path>,
    none: bool,
    cwd: &Path,
) -> Result<Option<ProjectConfig>, ConfigError> {
    if none {
        return Ok(None);
    }
    match explicit {
        Some(p) => match load_file(p)? {
            Some(c) => Ok(Some(c)),
            None => Err(ConfigError::File {
                file: p.display().to_string(),
                message: "--config: this pyproject.toml has no [tool.leakgate] table".into(),
            }),
        },
        None => discover(cwd),
    }
}

fn value_enum<T: ValueEnum>(src: &Source, key: &str, v: Spanned<String>) -> Result<T, ConfigError> {
    T::from_str(v.get_ref(), false).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|x| x.to_possible_value())
            .map(|p| format!("\"{}\"", p.get_name()))
            .collect();
        src.at(
            v.span().start,
            format!(
                "{key}: invalid value {:?} (expected {})",
                v.get_ref(),
                names.join(", ")
            ),
        )
    })
}

fn duration(src: &Source, key: &str, v: Spanned<String>) -> Result<Duration, ConfigError> {
    crate::run::parse_duration(v.get_ref())
        .map_err(|e| src.at(v.span().start, format!("{key}: {e}")))
}

/// Paths of a list, relative to the file; each must exist when `exist`.
fn paths(
    src: &Source,
    key: &str,
    v: Spanned<List>,
    exist: impl Fn(&Path) -> bool,
    what: &str,
) -> Result<Vec<PathBuf>, ConfigError> {
    let start = v.span().start;
    v.into_inner()
        .0
        .iter()
        .map(|p| {
            let full = src.path(p);
            if exist(&full) {
                Ok(full)
            } else {
                Err(src.at(start, format!("{key}: {p}: {what}")))
            }
        })
        .collect()
}

fn validate(src: &Source, r: Raw) -> Result<Settings, ConfigError> {
    let path = |v: S<String>| v.map(|v| src.path(v.get_ref()));
    let plain = |v: S<bool>| v.map(Spanned::into_inner);
    let strings = |v: S<List>| v.map(|v| v.into_inner().0);
    let joined = |v: S<List>| v.map(|v| v.into_inner().0.join(","));
    let mut s = Settings {
        user_objects: strings(r.user_objects),
        bundled_suppressions: plain(r.bundled_suppressions),
        show_unused_suppressions: plain(r.show_unused_suppressions),
        output: path(r.output),
        html: path(r.html),
        max_leaked_bytes: r.max_leaked_bytes.map(Spanned::into_inner),
        fail_on_incomplete: plain(r.fail_on_incomplete),
        baseline: path(r.baseline),
        junit: path(r.junit),
        sarif: path(r.sarif),
        codequality: path(r.codequality),
        markdown: path(r.markdown),
        repo_root: path(r.repo_root),
        num_callers: r.num_callers.map(Spanned::into_inner),
        show_leak_kinds: joined(r.show_leak_kinds),
        per_test: plain(r.per_test),
        track_fds: plain(r.track_fds),
        valgrind_args: strings(r.valgrind_args),
        keep_xml: path(r.keep_xml),
        ignore_target_exit: plain(r.ignore_target_exit),
        trace_children: plain(r.trace_children),
        trace_children_skip: joined(r.trace_children_skip),
        ..Settings::default()
    };
    if let Some(v) = r.src_roots {
        s.src_roots = Some(paths(
            src,
            "src-roots",
            v,
            Path::is_dir,
            "no such directory",
        )?);
    }
    if let Some(v) = r.suppressions {
        s.suppressions = Some(paths(
            src,
            "suppressions",
            v,
            Path::is_file,
            "no such file",
        )?);
    }
    if let Some(v) = r.valgrind {
        // A bare name is looked up on PATH, as `--valgrind` does.
        let p = PathBuf::from(v.get_ref());
        s.valgrind = Some(if p.components().count() > 1 {
            src.path(v.get_ref())
        } else {
            p
        });
    }
    if let Some(v) = r.format {
        s.format = Some(value_enum(src, "format", v)?);
    }
    if let Some(v) = r.color {
        s.color = Some(value_enum(src, "color", v)?);
    }
    if let Some(v) = r.annotations {
        s.annotations = Some(value_enum(src, "annotations", v)?);
    }
    if let Some(v) = r.engine {
        s.engine = Some(value_enum(src, "engine", v)?);
    }
    if let Some(v) = r.sanitizer_runtime {
        s.sanitizer_runtime = Some(src.path(v.get_ref()));
    }
    if let Some(v) = r.origins {
        s.origins = Some(value_enum(src, "origins", v)?);
    }
    if let Some(v) = r.fail_on {
        let start = v.span().start;
        let list = v.into_inner().0.join(",");
        s.fail_on = Some(FailOn::parse(&list).map_err(|e| src.at(start, format!("fail-on: {e}")))?);
    }
    if let Some(v) = r.repeat {
        if *v.get_ref() == 0 {
            return Err(src.at(v.span().start, "repeat: a test must run at least once"));
        }
        s.repeat = Some(v.into_inner());
    }
    if let Some(v) = r.timeout {
        s.timeout = Some(duration(src, "timeout", v)?);
    }
    if let Some(v) = r.kill_after {
        s.kill_after = Some(duration(src, "kill-after", v)?);
    }
    Ok(s)
}

// ------------------------------------------------------------- applying

/// Whether the option `id` was given on the command line (or by its
/// environment variable): then it wins over the file.
fn given(m: &ArgMatches, id: &str) -> bool {
    matches!(
        m.value_source(id),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// `*field = value` unless `id` was given.
fn set<T: Clone>(m: &ArgMatches, id: &str, field: &mut T, value: &Option<T>) {
    if let Some(v) = value
        && !given(m, id)
    {
        *field = v.clone();
    }
}

/// `*field = Some(value)` unless `id` was given.
fn set_some<T: Clone>(m: &ArgMatches, id: &str, field: &mut Option<T>, value: &Option<T>) {
    if let Some(v) = value
        && !given(m, id)
    {
        *field = Some(v.clone());
    }
}

/// A `--x`/`--no-x` pair set from `value` unless either was given.
fn set_pair(m: &ArgMatches, ids: [&str; 2], yes: &mut bool, no: &mut bool, value: Option<bool>) {
    if let Some(v) = value
        && !given(m, ids[0])
        && !given(m, ids[1])
    {
        *yes = v;
        *no = !v;
    }
}

/// Which of the shared report options a command takes from the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// `run`, `analyze`: all of them.
    Full,
    /// `merge`: not the source roots, objects and suppressions (each shard
    /// applied its own).
    Merge,
}

/// The options that decide what is the user's and what is suppressed, of
/// `run`/`analyze` (in [`ReportArgs`]) and of `suppress`.
struct Sources<'a> {
    src_roots: &'a mut Vec<PathBuf>,
    user_objects: &'a mut Vec<String>,
    suppressions: &'a mut Vec<PathBuf>,
    no_bundled_suppressions: &'a mut bool,
}

fn apply_sources(s: &Settings, m: &ArgMatches, a: Sources) {
    set(m, "src_roots", a.src_roots, &s.src_roots);
    set(m, "user_objects", a.user_objects, &s.user_objects);
    set(m, "suppressions", a.suppressions, &s.suppressions);
    if let Some(b) = s.bundled_suppressions
        && !given(m, "no_bundled_suppressions")
    {
        *a.no_bundled_suppressions = !b;
    }
}

fn apply_report(s: &Settings, m: &ArgMatches, a: &mut ReportArgs, scope: Scope) {
    if scope == Scope::Full {
        apply_sources(
            s,
            m,
            Sources {
                src_roots: &mut a.src_roots,
                user_objects: &mut a.user_objects,
                suppressions: &mut a.suppressions,
                no_bundled_suppressions: &mut a.no_bundled_suppressions,
            },
        );
    }
    set(
        m,
        "show_unused_suppressions",
        &mut a.show_unused_suppressions,
        &s.show_unused_suppressions,
    );
    set(m, "format", &mut a.format, &s.format);
    set_some(m, "output", &mut a.output, &s.output);
    set_some(m, "html", &mut a.html, &s.html);
    set(m, "color", &mut a.color, &s.color);
    set(m, "fail_on", &mut a.policy.fail_on, &s.fail_on);
    set_some(
        m,
        "max_leaked_bytes",
        &mut a.policy.max_leaked_bytes,
        &s.max_leaked_bytes,
    );
    set_pair(
        m,
        ["fail_on_incomplete", "no_fail_on_incomplete"],
        &mut a.policy.fail_on_incomplete,
        &mut a.policy.no_fail_on_incomplete,
        s.fail_on_incomplete,
    );
    set_some(m, "baseline", &mut a.ci.baseline, &s.baseline);
    set_some(m, "junit", &mut a.ci.junit, &s.junit);
    set_some(m, "sarif", &mut a.ci.sarif, &s.sarif);
    set_some(m, "codequality", &mut a.ci.codequality, &s.codequality);
    set_some(m, "markdown", &mut a.ci.markdown, &s.markdown);
    set(m, "annotations", &mut a.ci.annotations, &s.annotations);
    set_some(m, "repo_root", &mut a.ci.repo_root, &s.repo_root);
}

/// `run`: every key.
pub fn apply_run(s: &Settings, m: &ArgMatches, a: &mut RunArgs) {
    apply_report(s, m, &mut a.report, Scope::Full);
    set_some(m, "valgrind", &mut a.valgrind, &s.valgrind);
    set(m, "engine", &mut a.engine, &s.engine);
    set_some(
        m,
        "sanitizer_runtime",
        &mut a.sanitizer_runtime,
        &s.sanitizer_runtime,
    );
    set(m, "num_callers", &mut a.num_callers, &s.num_callers);
    set_some(
        m,
        "show_leak_kinds",
        &mut a.show_leak_kinds,
        &s.show_leak_kinds,
    );
    set_pair(
        m,
        ["per_test", "no_per_test"],
        &mut a.per_test,
        &mut a.no_per_test,
        s.per_test,
    );
    set(m, "repeat", &mut a.repeat, &s.repeat);
    if let Some(o) = s.origins
        && !given(m, "origins")
        && !given(m, "no_track_origins")
    {
        a.origins = o;
    }
    set(m, "track_fds", &mut a.track_fds, &s.track_fds);
    set(m, "valgrind_args", &mut a.valgrind_args, &s.valgrind_args);
    set_some(m, "keep_xml", &mut a.keep_xml, &s.keep_xml);
    set(
        m,
        "ignore_target_exit",
        &mut a.ignore_target_exit,
        &s.ignore_target_exit,
    );
    if let Some(t) = s.trace_children
        && !given(m, "no_trace_children")
    {
        a.no_trace_children = !t;
    }
    set_some(
        m,
        "trace_children_skip",
        &mut a.trace_children_skip,
        &s.trace_children_skip,
    );
    set_some(m, "timeout", &mut a.timeout, &s.timeout);
    set(m, "kill_after", &mut a.kill_after, &s.kill_after);
}

/// `analyze`: the report, policy and output keys.
pub fn apply_analyze(s: &Settings, m: &ArgMatches, a: &mut AnalyzeArgs) {
    apply_report(s, m, &mut a.report, Scope::Full);
}

/// `merge`: the policy and output keys (not sources and suppressions).
pub fn apply_merge(s: &Settings, m: &ArgMatches, a: &mut MergeArgs) {
    apply_report(s, m, &mut a.report, Scope::Merge);
}

/// `suppress`: sources, objects, suppression files and the valgrind.
pub fn apply_suppress(s: &Settings, m: &ArgMatches, a: &mut SuppressArgs) {
    apply_sources(
        s,
        m,
        Sources {
            src_roots: &mut a.src_roots,
            user_objects: &mut a.user_objects,
            suppressions: &mut a.suppressions,
            no_bundled_suppressions: &mut a.no_bundled_suppressions,
        },
    );
    set_some(m, "valgrind", &mut a.valgrind, &s.valgrind);
}

#[cfg(test)]
mod tests;
