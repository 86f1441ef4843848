//! API coverage: every public operation of the core's `Store` (each `pub fn`
//! of an `impl Store` block in core/src/store.rs, read with `syn`) must be
//! covered by each face, or excused in tests/api-coverage/allow.toml.
//!
//! A face's names are read from its declaration file as text (C header, C++
//! header, Python stub and aio module, Node typings, the CLI's clap enum, the
//! Rust async face); one small function per face turns an operation's name
//! into the names that face would use for it (`*_names` below). An operation
//! whose face name differs from that rule gets an `[alias.FACE]` entry; one a
//! face deliberately lacks gets an `[excuse.FACE]` entry with a one-line
//! reason. The test fails on an uncovered operation and on a stale entry (an
//! operation that does not exist, an excuse for something covered, an alias
//! to a name the face does not declare or that the rule already finds).
//!
//! `FENCING_API_COVERAGE_PRINT=1` makes `print_table` print the table
//! (scripts/api-coverage; docs/api-coverage.md).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const ALLOW: &str = "tests/api-coverage/allow.toml";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ has a parent")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

// ----- the core's operations, from the code -----

/// The `pub fn`s (sync or async) of every inherent `impl TYPE` block in a
/// Rust file, in source order.
fn impl_pub_fns(rel: &str, type_name: &str) -> Vec<String> {
    let file = syn::parse_file(&read(rel)).unwrap_or_else(|e| panic!("parsing {rel}: {e}"));
    let mut out = Vec::new();
    for item in &file.items {
        let syn::Item::Impl(imp) = item else { continue };
        if imp.trait_.is_some() {
            continue;
        }
        let syn::Type::Path(ty) = &*imp.self_ty else {
            continue;
        };
        if ty.path.segments.last().map(|s| s.ident.to_string()) != Some(type_name.into()) {
            continue;
        }
        for it in &imp.items {
            if let syn::ImplItem::Fn(f) = it {
                if matches!(f.vis, syn::Visibility::Public(_)) {
                    out.push(f.sig.ident.to_string());
                }
            }
        }
    }
    out
}

/// Module-level `pub fn`s of a Rust file.
fn module_pub_fns(rel: &str) -> Vec<String> {
    let file = syn::parse_file(&read(rel)).unwrap_or_else(|e| panic!("parsing {rel}: {e}"));
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                Some(f.sig.ident.to_string())
            }
            _ => None,
        })
        .collect()
}

/// A public type of the core whose operations every face covers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Surface {
    /// `fencing::Store`: a row per operation, named as it is (`put`).
    Store,
    /// `fencing::objects::Objects`: rows named `Objects::put`.
    Objects,
}

const SURFACES: [Surface; 2] = [Surface::Store, Surface::Objects];

impl Surface {
    fn type_name(self) -> &'static str {
        match self {
            Surface::Store => "Store",
            Surface::Objects => "Objects",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Surface::Store => "core/src/store.rs",
            Surface::Objects => "core/src/objects/mod.rs",
        }
    }

    /// How the table and the allow-list name one of its operations.
    fn label(self, op: &str) -> String {
        match self {
            Surface::Store => op.to_owned(),
            Surface::Objects => format!("Objects::{op}"),
        }
    }
}

/// The surface and operation a label names.
fn split(label: &str) -> (Surface, &str) {
    match label.strip_prefix("Objects::") {
        Some(op) => (Surface::Objects, op),
        None => (Surface::Store, label),
    }
}

/// Every operation's label: the store's, then the objects'.
fn core_operations() -> Vec<String> {
    let mut ops = Vec::new();
    for surface in SURFACES {
        let found = impl_pub_fns(surface.file(), surface.type_name());
        assert!(
            found.len() >= 4,
            "found only {found:?} in {}: is `impl {}` still there?",
            surface.file(),
            surface.type_name()
        );
        ops.extend(found.iter().map(|op| surface.label(op)));
    }
    ops
}

// ----- each face's declared names, read as text -----

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Face {
    C,
    Cpp,
    Python,
    PythonAio,
    Node,
    Cli,
    RustAio,
}

const FACES: [Face; 7] = [
    Face::C,
    Face::Cpp,
    Face::Python,
    Face::PythonAio,
    Face::Node,
    Face::Cli,
    Face::RustAio,
];

impl Face {
    /// The section suffix in allow.toml.
    fn id(self) -> &'static str {
        match self {
            Face::C => "c",
            Face::Cpp => "cpp",
            Face::Python => "python",
            Face::PythonAio => "python_aio",
            Face::Node => "node",
            Face::Cli => "cli",
            Face::RustAio => "rust_aio",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Face::C => "C",
            Face::Cpp => "C++ (nothrow::Store, nothrow::Objects)",
            Face::Python => "Python",
            Face::PythonAio => "Python aio",
            Face::Node => "Node",
            Face::Cli => "CLI",
            Face::RustAio => "Rust aio",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Face::C => "include/fencing.h",
            Face::Cpp => "include/fencing.hpp",
            Face::Python => "bindings/python/python/fencing/_native.pyi",
            Face::PythonAio => "bindings/python/python/fencing/aio.py",
            Face::Node => "bindings/node/fencing.d.ts",
            Face::Cli => "cli/src/cli.rs",
            Face::RustAio => "core/src/aio.rs",
        }
    }

    /// The file the face declares `surface` in (the Rust async face keeps
    /// its objects apart).
    fn file_for(self, surface: Surface) -> &'static str {
        match (self, surface) {
            (Face::RustAio, Surface::Objects) => "core/src/objects/aio.rs",
            _ => self.file(),
        }
    }

    /// Every name the face declares for `surface`, as the table shows it: a
    /// member of the face's class bare, a free function with its module
    /// (`nothrow::migrate`, `fencing.migrate`, `aio::open`).
    fn declared(self, surface: Surface) -> BTreeSet<String> {
        let file = self.file_for(surface);
        let text = read(file);
        let class = surface.type_name();
        let names = match self {
            Face::C => c_functions(&text),
            Face::Cpp => cpp_names(&text, class),
            Face::Python => python_names(&text, "fencing", class),
            Face::PythonAio => python_names(&text, "fencing.aio", class),
            Face::Node => node_names(&text, class),
            Face::Cli => match surface {
                Surface::Store => cli_subcommands(&text, "Command"),
                Surface::Objects => cli_subcommands(&text, "ObjectCommand")
                    .into_iter()
                    .map(|n| format!("object {n}"))
                    .collect(),
            },
            Face::RustAio => {
                let mut n: BTreeSet<String> = impl_pub_fns(file, class).into_iter().collect();
                n.extend(
                    module_pub_fns(file)
                        .into_iter()
                        .map(|f| format!("aio::{f}")),
                );
                n
            }
        };
        assert!(
            !names.is_empty(),
            "read no {class} names from {file}: has its layout changed?"
        );
        names
    }

    /// The names, in order of preference, this face would give `op` by its
    /// naming rule (one small function per face).
    fn rule(self, surface: Surface, op: &str) -> Vec<String> {
        match surface {
            Surface::Store => match self {
                Face::C => c_rule(op),
                Face::Cpp => cpp_rule(op),
                Face::Python => python_rule(op, "fencing"),
                Face::PythonAio => python_rule(op, "fencing.aio"),
                Face::Node => node_rule(op),
                Face::Cli => cli_rule(op),
                Face::RustAio => rust_aio_rule(op),
            },
            Surface::Objects => objects_rule(self, op),
        }
    }
}

/// Fenced objects: C `fencing_objects_<op>`; a member of each face's
/// `Objects` class; the opener beside the store's (`fencing.open_objects`,
/// `openObjects`); the CLI's `object <op>`.
fn objects_rule(face: Face, op: &str) -> Vec<String> {
    match face {
        Face::C => vec![format!("fencing_objects_{op}")],
        Face::Cpp => vec![op.to_owned(), format!("nothrow::{op}_objects")],
        Face::Python => vec![op.to_owned(), format!("fencing.{op}_objects")],
        Face::PythonAio => vec![op.to_owned(), format!("fencing.aio.{op}_objects")],
        Face::Node => {
            let camel = node_rule(op).swap_remove(0);
            vec![camel.clone(), format!("fencing.{camel}Objects")]
        }
        Face::Cli => vec![format!("object {}", cli_rule(op).swap_remove(0))],
        Face::RustAio => vec![op.to_owned()],
    }
}

/// C: `fencing_<op>`, or `fencing_store_<op>` (store_open, store_close, ...).
fn c_rule(op: &str) -> Vec<String> {
    vec![format!("fencing_{op}"), format!("fencing_store_{op}")]
}

/// C++: a member of `nothrow::Store`, or a function of namespace `nothrow`.
fn cpp_rule(op: &str) -> Vec<String> {
    vec![op.to_owned(), format!("nothrow::{op}")]
}

/// Python: the same snake_case name on `Store`, or a module function.
fn python_rule(op: &str, module: &str) -> Vec<String> {
    vec![op.to_owned(), format!("{module}.{op}")]
}

/// Node: snake_case to camelCase, on `Store` or exported by the module.
fn node_rule(op: &str) -> Vec<String> {
    let mut camel = String::new();
    let mut upper = false;
    for ch in op.chars() {
        if ch == '_' {
            upper = true;
        } else if upper {
            camel.extend(ch.to_uppercase());
            upper = false;
        } else {
            camel.push(ch);
        }
    }
    vec![camel.clone(), format!("fencing.{camel}")]
}

/// CLI: the kebab-case subcommand.
fn cli_rule(op: &str) -> Vec<String> {
    vec![op.replace('_', "-")]
}

/// Rust aio: the same name on `aio::Store`, or a function of module `aio`.
fn rust_aio_rule(op: &str) -> Vec<String> {
    vec![op.to_owned(), format!("aio::{op}")]
}

/// C and C++ text without its comments (string literals are left alone;
/// the headers have no comment markers inside strings).
fn strip_c_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
            out.push(' ');
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else {
            let ch = rest.chars().next().expect("not empty");
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || ch == '_'
}

/// Every identifier directly followed (after blanks) by `(`, in order.
fn called_idents(text: &str) -> Vec<String> {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if is_ident(bytes[i]) && (i == 0 || !is_ident(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            let ident: String = bytes[start..i].iter().collect();
            let mut j = i;
            while j < bytes.len() && bytes[j].is_whitespace() {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == '(' && !bytes[start].is_ascii_digit() {
                out.push(ident);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// C: every function the header declares (`fencing_*` names before `(`,
/// comments removed).
fn c_functions(text: &str) -> BTreeSet<String> {
    called_idents(&strip_c_comments(text))
        .into_iter()
        .filter(|n| n.starts_with("fencing_"))
        .collect()
}

/// The text between the `{` at `open` and its matching `}`.
fn braced(text: &str, open: usize) -> &str {
    let mut depth = 0usize;
    for (i, ch) in text[open..].char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces")
}

/// A body's declarations at its own level: nested `{...}` blocks become
/// `;`, and the text is split into statements at `;`.
fn top_level_statements(body: &str) -> Vec<String> {
    let mut flat = String::new();
    let mut depth = 0usize;
    for ch in body.chars() {
        match ch {
            '{' => {
                if depth == 0 {
                    flat.push(';');
                }
                depth += 1;
            }
            '}' => depth -= 1,
            _ if depth == 0 => flat.push(ch),
            _ => {}
        }
    }
    flat.split(';').map(str::to_owned).collect()
}

/// The declared name of one C++ declaration: its first `name(`.
fn cpp_declared_name(stmt: &str) -> Option<String> {
    called_idents(stmt)
        .into_iter()
        .find(|n| !matches!(n.as_str(), "operator" | "decltype" | "alignas" | "noexcept"))
}

/// C++: the public members of `nothrow::CLASS` and the functions of
/// namespace `nothrow` (as `nothrow::name`).
fn cpp_names(text: &str, class: &str) -> BTreeSet<String> {
    let text = strip_c_comments(text);
    let ns = text
        .find("namespace nothrow {")
        .expect("include/fencing.hpp has namespace nothrow");
    let ns_body = braced(&text, ns + "namespace nothrow ".len());
    let mut names = BTreeSet::new();
    for stmt in top_level_statements(ns_body) {
        let stmt = stmt.trim();
        if stmt.starts_with("class ") || stmt.starts_with("struct ") || stmt.starts_with("using ") {
            continue;
        }
        if let Some(n) = cpp_declared_name(stmt) {
            names.insert(format!("nothrow::{n}"));
        }
    }
    let Some(at) = ns_body.find(&format!("class {class} {{")) else {
        return names;
    };
    let class_body = braced(ns_body, at + format!("class {class} ").len());
    let mut public = false; // a class starts private
    for stmt in top_level_statements(class_body) {
        let mut decl = stmt.as_str();
        // The last access label in the statement decides.
        let last = [
            ("public:", true),
            ("private:", false),
            ("protected:", false),
        ]
        .into_iter()
        .filter_map(|(label, is_public)| decl.rfind(label).map(|i| (i + label.len(), is_public)))
        .max();
        if let Some((after, is_public)) = last {
            public = is_public;
            decl = &decl[after..];
        }
        if !public {
            continue;
        }
        if let Some(n) = cpp_declared_name(decl) {
            if n != class {
                names.insert(n);
            }
        }
    }
    names
}

/// The name of a Python `def NAME(` / `async def NAME(` at exactly
/// `indent` spaces.
fn python_def(line: &str, indent: usize) -> Option<&str> {
    let lead = line.len() - line.trim_start_matches(' ').len();
    if lead != indent {
        return None;
    }
    let l = line.trim_start();
    let l = l.strip_prefix("async ").unwrap_or(l);
    let l = l.strip_prefix("def ")?;
    let end = l.find('(')?;
    Some(l[..end].trim())
}

/// Python: the public methods and properties of `class CLASS` and the
/// public module functions (as `module.name`).
fn python_names(text: &str, module: &str, class: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_store = false;
    for line in text.lines() {
        let top = !line.is_empty() && !line.starts_with([' ', '\t', '#', ')', ']']);
        if top {
            in_store = line.starts_with(&format!("class {class}:"))
                || line.starts_with(&format!("class {class}("));
        }
        if let Some(n) = python_def(line, 0) {
            if !n.starts_with('_') {
                names.insert(format!("{module}.{n}"));
            }
        }
        if in_store {
            if let Some(n) = python_def(line, 4) {
                if !n.starts_with('_') || n == "__new__" {
                    names.insert(n.to_owned());
                }
            }
        }
    }
    names
}

/// Node: the members of `export declare class CLASS` (methods, static
/// methods, readonly properties, getters) and the module's exported
/// functions (as `fencing.name`). Members fencing.js passes through
/// unchanged are declared once, in the generated index.d.ts:
/// `export interface CLASS extends Omit<NativeCLASS, 'a' | 'b'> {}` adds
/// `NativeCLASS`'s members there, less the ones named.
fn node_names(text: &str, class: &str) -> BTreeSet<String> {
    let mut names = node_class_members(text, class);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("export declare function ") {
            let end = rest.find(['(', '<']).unwrap_or(rest.len());
            names.insert(format!("fencing.{}", rest[..end].trim()));
        }
    }
    let native = format!("Native{class}");
    for decl in text.split("export interface ").skip(1) {
        let head: String = decl[..decl.find('{').unwrap_or(0)]
            .split_whitespace()
            .collect();
        let Some(omit) = head.strip_prefix(&format!("{class}extendsOmit<{native},")) else {
            continue;
        };
        let omitted: BTreeSet<&str> = omit.split('\'').skip(1).step_by(2).collect();
        let derived = node_class_members(&read("bindings/node/index.d.ts"), &native);
        for name in &omitted {
            assert!(
                derived.contains(*name),
                "Omit<{native}, '{name}'>: {native} has no {name}"
            );
        }
        names.extend(
            derived
                .into_iter()
                .filter(|n| !omitted.contains(n.as_str())),
        );
    }
    names
}

/// The members of `export declare class CLASS` (methods, static methods,
/// readonly properties, getters).
fn node_class_members(text: &str, class: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_store = false;
    for line in text.lines() {
        if line.starts_with(&format!("export declare class {class} ")) {
            in_store = true;
            continue;
        }
        if in_store && line.starts_with('}') {
            in_store = false;
        }
        if !in_store || !line.starts_with("  ") || line.starts_with("   ") {
            continue;
        }
        let mut m = line.trim();
        for modifier in ["static ", "readonly ", "get ", "async "] {
            m = m.strip_prefix(modifier).unwrap_or(m);
        }
        if m.starts_with("private ") || m.starts_with('[') {
            continue;
        }
        let end = m.find(['(', '<', ':', '?']).unwrap_or(m.len());
        let name = m[..end].trim();
        if !name.is_empty() && name.chars().all(is_ident) && name != "constructor" {
            names.insert(name.to_owned());
        }
    }
    names
}

/// CLI: the visible subcommands of `enum NAME` (`Command`, or a nested
/// one), kebab-case as clap derives them (or the `#[command(name = "...")]`
/// given).
fn cli_subcommands(text: &str, name: &str) -> BTreeSet<String> {
    let file = syn::parse_file(text).expect("parsing cli/src/cli.rs");
    let command = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Enum(e) if e.ident == name => Some(e),
            _ => None,
        })
        .unwrap_or_else(|| panic!("cli/src/cli.rs has no enum {name}"));
    let mut names = BTreeSet::new();
    'variants: for v in &command.variants {
        let mut name = kebab(&v.ident.to_string());
        for attr in &v.attrs {
            if !attr.path().is_ident("command") {
                continue;
            }
            let mut hidden = false;
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("hide") {
                    let value: syn::LitBool = meta.value()?.parse()?;
                    hidden = value.value;
                } else if meta.path.is_ident("name") {
                    let value: syn::LitStr = meta.value()?.parse()?;
                    name = value.value();
                } else if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                }
                Ok(())
            })
            .expect("reading a #[command(...)] attribute");
            if hidden {
                continue 'variants;
            }
        }
        names.insert(name);
    }
    names
}

fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for (i, ch) in camel.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

// ----- the allow-list -----

/// tests/api-coverage/allow.toml, a small subset of TOML: `[excuse.FACE]`
/// and `[alias.FACE]` sections of `operation = "text"` lines.
#[derive(Default)]
struct Allow {
    /// (face, operation) -> reason
    excuses: BTreeMap<(Face, String), String>,
    /// (face, operation) -> the face's name for it
    aliases: BTreeMap<(Face, String), String>,
}

fn parse_allow(text: &str) -> Result<Allow, Vec<String>> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e| vec![format!("{ALLOW}: {e}")])?;
    let mut allow = Allow::default();
    let mut errors = Vec::new();
    let sections = FACES.map(Face::id).join(", ");
    for (kind, faces) in doc.iter() {
        let is_excuse = match kind {
            "excuse" => true,
            "alias" => false,
            _ => {
                errors.push(format!(
                    "{ALLOW}: unknown `{kind}` (want [excuse.FACE] or [alias.FACE], FACE one of {sections})"
                ));
                continue;
            }
        };
        let Some(faces) = faces.as_table() else {
            errors.push(format!(
                "{ALLOW}: `{kind}` must be a table of [{kind}.FACE] sections"
            ));
            continue;
        };
        for (id, entries) in faces.iter() {
            let face = FACES.iter().copied().find(|f| f.id() == id);
            let (Some(face), Some(entries)) = (face, entries.as_table()) else {
                errors.push(format!(
                    "{ALLOW}: unknown section [{kind}.{id}] (FACE one of {sections})"
                ));
                continue;
            };
            let map = if is_excuse {
                &mut allow.excuses
            } else {
                &mut allow.aliases
            };
            for (op, value) in entries.iter() {
                match value.as_str().map(str::trim) {
                    Some(value) if !value.is_empty() => {
                        map.insert((face, op.to_owned()), value.to_owned());
                    }
                    _ => errors.push(format!(
                        "{ALLOW}: [{kind}.{id}] `{op}` must be non-empty text"
                    )),
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(allow)
    } else {
        Err(errors)
    }
}

// ----- the check -----

enum Cell {
    Covered(String),
    Excused(String),
    Missing,
}

struct Report {
    ops: Vec<String>,
    cells: BTreeMap<(Face, String), Cell>,
    problems: Vec<String>,
}

fn check() -> Report {
    let ops = core_operations();
    let op_set: BTreeSet<&str> = ops.iter().map(String::as_str).collect();
    let allow = match parse_allow(&read(ALLOW)) {
        Ok(a) => a,
        Err(errors) => panic!("{}", errors.join("\n")),
    };
    let mut problems = Vec::new();
    let mut cells = BTreeMap::new();
    for face in FACES {
        let declared_by: BTreeMap<Surface, BTreeSet<String>> =
            SURFACES.map(|s| (s, face.declared(s))).into();
        for op in &ops {
            let key = (face, op.clone());
            let (surface, name) = split(op);
            let declared = &declared_by[&surface];
            let by_rule = face
                .rule(surface, name)
                .into_iter()
                .find(|n| declared.contains(n));
            let alias = allow.aliases.get(&key);
            let excuse = allow.excuses.get(&key);
            let covered = by_rule
                .clone()
                .or_else(|| alias.filter(|a| declared.contains(*a)).cloned());
            if let Some(a) = alias {
                if let Some(r) = &by_rule {
                    problems.push(format!(
                        "{}: stale alias {op} = \"{a}\" in {ALLOW}: the naming rule already finds `{r}`",
                        face.id()
                    ));
                } else if !declared.contains(a) {
                    problems.push(format!(
                        "{}: alias {op} = \"{a}\" in {ALLOW}, but {} declares no `{a}`",
                        face.id(),
                        face.file_for(surface)
                    ));
                }
            }
            if let (Some(reason), Some(name)) = (excuse, &covered) {
                problems.push(format!(
                    "{}: stale excuse for {op} in {ALLOW} (\"{reason}\"): the face covers it as `{name}`",
                    face.id()
                ));
            }
            let cell = match (covered, excuse) {
                (Some(name), _) => Cell::Covered(name),
                (None, Some(reason)) => Cell::Excused(reason.clone()),
                (None, None) => {
                    problems.push(format!(
                        "{}: core operation {}::{name} is not covered (looked for {} in {}) and not excused in {ALLOW} [excuse.{}]",
                        face.id(),
                        surface.type_name(),
                        face.rule(surface, name)
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(" or "),
                        face.file_for(surface),
                        face.id()
                    ));
                    Cell::Missing
                }
            };
            cells.insert(key, cell);
        }
    }
    for (face, op) in allow.excuses.keys().chain(allow.aliases.keys()) {
        if !op_set.contains(op.as_str()) {
            problems.push(format!(
                "{}: {ALLOW} names `{op}`, which is not a pub fn of impl Store in core/src/store.rs nor (as Objects::NAME) of impl Objects in core/src/objects/mod.rs",
                face.id()
            ));
        }
    }
    for key @ (face, op) in allow.excuses.keys() {
        if allow.aliases.contains_key(key) {
            problems.push(format!(
                "{}: `{op}` is both aliased and excused in {ALLOW}",
                face.id()
            ));
        }
    }
    Report {
        ops,
        cells,
        problems,
    }
}

fn table(report: &Report) -> String {
    let mut out = String::from("| operation |");
    for face in FACES {
        write!(out, " {} |", face.title()).unwrap();
    }
    out.push_str("\n|---|");
    for _ in FACES {
        out.push_str("---|");
    }
    out.push('\n');
    for op in &report.ops {
        write!(out, "| `{op}` |").unwrap();
        for face in FACES {
            match &report.cells[&(face, op.clone())] {
                Cell::Covered(name) => write!(out, " `{name}` |").unwrap(),
                Cell::Excused(reason) => write!(out, " excused: {reason} |").unwrap(),
                Cell::Missing => out.push_str(" **MISSING** |"),
            }
        }
        out.push('\n');
    }
    out
}

#[test]
fn every_core_operation_is_covered_or_excused() {
    let report = check();
    assert!(
        report.problems.is_empty(),
        "API coverage: {} problem(s):\n{}\n\ntable:\n{}",
        report.problems.len(),
        report.problems.join("\n"),
        table(&report)
    );
}

/// Prints the table when FENCING_API_COVERAGE_PRINT is set (scripts/api-coverage).
#[test]
fn print_table() {
    if std::env::var_os("FENCING_API_COVERAGE_PRINT").is_some() {
        let report = check();
        let mut out = String::from("--- api-coverage table ---\n");
        out.push_str(&table(&report));
        for p in &report.problems {
            writeln!(out, "problem: {p}").unwrap();
        }
        out.push_str("--- end ---\n");
        // One write, so the harness's own lines cannot land inside.
        print!("{out}");
    }
}

#[test]
fn naming_rules() {
    assert_eq!(node_rule("advance_counter")[0], "advanceCounter");
    assert_eq!(node_rule("get")[0], "get");
    assert_eq!(cli_rule("lower_wedged"), ["lower-wedged"]);
    assert_eq!(kebab("AdvanceCounter"), "advance-counter");
    assert_eq!(c_rule("open")[1], "fencing_store_open");
    assert_eq!(objects_rule(Face::Node, "open")[1], "fencing.openObjects");
    assert_eq!(objects_rule(Face::Cli, "put"), ["object put"]);
    assert_eq!(split("Objects::get"), (Surface::Objects, "get"));
    assert_eq!(split("get"), (Surface::Store, "get"));
}

#[test]
fn allow_list_parser_refuses_what_it_does_not_know() {
    assert!(parse_allow("[excuse.cli]\nkeep_alive = \"fencing run holds a lease\"\n").is_ok());
    assert!(parse_allow("[excuse.fortran]\nx = \"y\"\n").is_err());
    assert!(parse_allow("keep_alive = \"outside a section\"\n").is_err());
    assert!(parse_allow("[alias.c]\nstatus = fencing_scope_status\n").is_err());
    assert!(parse_allow("[excuse.c]\na = \"x\"\na = \"y\"\n").is_err());
}

/// docs/api-coverage.md shows the table as the code has it now: rewrite it
/// with `scripts/api-coverage --write` after changing a face or an excuse.
#[test]
fn the_documented_table_is_current() {
    let doc = read("docs/api-coverage.md");
    let start = "<!-- table: scripts/api-coverage --write -->\n";
    let end = "<!-- end of table -->";
    let shown = doc
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(table, _)| table)
        .expect("docs/api-coverage.md has its table markers");
    assert_eq!(
        shown,
        table(&check()),
        "docs/api-coverage.md is behind the code: run scripts/api-coverage --write"
    );
}
