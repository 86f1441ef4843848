//! Turns the benches' JSON Lines into the report: prints the table, writes
//! it between the markers of a Markdown file, and draws the SVG charts:
//! throughput against concurrency at `--svg`, and beside it (when the lines
//! hold such curves) `NAME-scale.svg` (against scopes, entries, value size)
//! and `NAME-latency.svg` (percentiles per call).
//!
//! ```text
//! bench-report --in target/bench/results.jsonl [--doc docs/performance.md]
//!              [--svg docs/performance.svg] [--stamp "text above the table"]
//!              [--expect memory,c-abi,sqlite,...] [--keep-other-groups]
//! ```
//! `--keep-other-groups` (a run of some benches only): the document keeps
//! the rows of every group this run has no line of, its stamp and its
//! chart links; this run's groups' rows are replaced
//! (`render::merged_section`).
//! `--expect` fails the run when a listed group wrote no line (a bench that
//! silently stopped reporting).
//! The image link in the document is the SVG's path relative to the
//! document's directory (its file name when both are in one directory).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fencing_benches::render;

fn relative(svg: &Path, doc: &Path) -> String {
    let doc_dir = doc.parent().unwrap_or(Path::new(""));
    svg.strip_prefix(doc_dir)
        .unwrap_or(svg)
        .display()
        .to_string()
}

/// `docs/performance.svg` with `-scale` -> `docs/performance-scale.svg`.
fn beside(svg: &Path, suffix: &str) -> PathBuf {
    let stem = svg.file_stem().unwrap_or_default().to_string_lossy();
    let ext = svg
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    svg.with_file_name(format!("{stem}{suffix}{ext}"))
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut input, mut doc, mut svg, mut stamp) = (None, None, None, String::new());
    let mut expect: Vec<String> = Vec::new();
    let mut keep_others = false;
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--in" => input = Some(PathBuf::from(value()?)),
            "--doc" => doc = Some(PathBuf::from(value()?)),
            "--svg" => svg = Some(PathBuf::from(value()?)),
            "--stamp" => stamp = value()?,
            "--keep-other-groups" => keep_others = true,
            "--expect" => {
                expect = value()?
                    .split(',')
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
            _ => return Err(format!("unknown argument {a} (see the source's header)")),
        }
    }
    let input = input.ok_or("--in FILE is required")?;
    let text = std::fs::read_to_string(&input)
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let (lines, errors) = render::parse(&text);
    for e in &errors {
        eprintln!("bench-report: {}: {e}", input.display());
    }
    if lines.is_empty() {
        return Err(format!("{} holds no results", input.display()));
    }
    println!("{}", render::table(&lines));
    // The concurrency chart at --svg; the others beside it (`-scale`,
    // `-latency` before the extension), written only when they have a panel.
    let mut charts: Vec<(String, PathBuf)> = Vec::new();
    if let Some(svg) = &svg {
        for (which, suffix, title) in render::CHARTS {
            let path = beside(svg, suffix);
            let always = suffix.is_empty();
            if !always && render::chart_panels(which, &lines) == 0 {
                continue;
            }
            let panels = render::chart_of(which, &lines, &path, title)?;
            println!("chart: {} ({panels} panels)", path.display());
            charts.push((render::chart_alt(which).to_owned(), path));
        }
    }
    if let Some(doc) = &doc {
        let old = match std::fs::read_to_string(doc) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", doc.display())),
        };
        let links: Vec<(String, String)> = charts
            .iter()
            .map(|(alt, path)| (alt.clone(), relative(path, doc)))
            .collect();
        let links: Vec<(&str, &str)> = links
            .iter()
            .map(|(a, l)| (a.as_str(), l.as_str()))
            .collect();
        let section = if keep_others {
            render::merged_section(&old, &lines, &stamp)
        } else {
            render::section(&lines, &stamp, &links)
        };
        let new = render::splice(&old, &section)?;
        std::fs::write(doc, new).map_err(|e| format!("cannot write {}: {e}", doc.display()))?;
        println!("table: {}", doc.display());
    }
    let missing: Vec<&String> = expect
        .iter()
        .filter(|g| !lines.iter().any(|l| &l.group == *g))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no result lines from {missing:?} in {} (a bench stopped reporting?)",
            input.display()
        ));
    }
    if !errors.is_empty() {
        return Err(format!(
            "{} malformed line(s) in {}",
            errors.len(),
            input.display()
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-report: {e}");
            ExitCode::FAILURE
        }
    }
}
