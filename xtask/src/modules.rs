//! The module graph of a crate, read from its source, and the circles in it.
//!
//! A module *uses* another when its code names it: a `use` line or a path in a body that
//! starts with `crate::`, `super::`, `self::` or the name of one of its own child modules.
//! The crate's root file (`lib.rs` or `main.rs`) is its table of contents, not a module of
//! its own: a path to an item the root re-exports counts as a use of the module the item
//! comes from. Inline modules (`mod tests { … }`) belong to the file they are written in.
//!
//! *Rationale:* a reader learns a module from its imports; when two modules import each
//! other, directly or through others, there is no place to start reading. The check reads
//! text rather than compiling, so it runs in a second and needs nothing but the sources.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crates whose modules must not import each other in a circle.
pub const CRATES: [&str; 6] = ["shared", "server", "web", "conformance", "bench", "xtask"];

/// A crate's modules (by path below the root, such as `app::editor`) and what each uses.
#[derive(Debug, Default)]
pub struct Graph {
    pub uses: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    /// Reads every `.rs` file under `src` (the crate's `src/` folder).
    pub fn read(src: &Path) -> Result<Graph, String> {
        let mut files = BTreeMap::new();
        collect(src, src, &mut files)?;
        Ok(Graph::from_files(&files))
    }

    /// Builds the graph from (module path, source text) pairs; the root has the path "".
    pub fn from_files(files: &BTreeMap<String, String>) -> Graph {
        let modules: BTreeSet<String> = files.keys().filter(|m| !m.is_empty()).cloned().collect();
        let reexports = files
            .get("")
            .map(|root| reexports(&strip(root)))
            .unwrap_or_default();
        let mut graph = Graph::default();
        for (module, text) in files {
            if module.is_empty() {
                continue;
            }
            let mut used = BTreeSet::new();
            for (path, in_inline) in paths(&strip(text)) {
                let base = match path.first().map(String::as_str) {
                    Some("crate") => Some(Vec::new()),
                    Some("super") => {
                        // `super` in an inline module is the file's own module.
                        let mut parts = split(module);
                        if !in_inline {
                            parts.pop();
                        }
                        Some(parts)
                    }
                    Some("self") => Some(split(module)),
                    // A path that starts with a child module's name.
                    Some(first)
                        if modules.contains(&join(
                            &[split(module), vec![first.to_string()]].concat(),
                        )) =>
                    {
                        Some(split(module))
                    }
                    _ => None,
                };
                let Some(mut at) = base else { continue };
                let rest: Vec<&String> = if matches!(path[0].as_str(), "crate" | "super" | "self") {
                    path[1..].iter().collect()
                } else {
                    path.iter().collect()
                };
                for segment in &rest {
                    if segment.as_str() == "super" {
                        at.pop();
                        continue;
                    }
                    let mut next = at.clone();
                    next.push((*segment).clone());
                    if modules.contains(&join(&next)) {
                        at = next;
                    } else {
                        if at.is_empty() {
                            // An item of the root: the module it is re-exported from.
                            if let Some(from) = reexports.get(segment.as_str()) {
                                at = split(from);
                            }
                        }
                        break;
                    }
                }
                let target = join(&at);
                if !target.is_empty() && target != *module {
                    used.insert(target);
                }
            }
            graph.uses.insert(module.clone(), used);
        }
        graph
    }

    /// Every circle: each set of two or more modules that reach one another, sorted.
    pub fn circles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.uses.keys().collect();
        let mut circles = Vec::new();
        let mut placed = BTreeSet::new();
        for name in &names {
            if placed.contains(*name) {
                continue;
            }
            let from_here = self.reach(name);
            let mut circle: Vec<String> = from_here
                .iter()
                .filter(|other| *other != *name && self.reach(other).contains(*name))
                .cloned()
                .collect();
            if circle.is_empty() {
                continue;
            }
            circle.push((*name).clone());
            circle.sort();
            placed.extend(circle.iter().cloned());
            circles.push(circle);
        }
        circles
    }

    fn reach(&self, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(module) = stack.pop() {
            for next in self.uses.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    }
}

fn split(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

fn join(parts: &[String]) -> String {
    parts.join("::")
}

fn collect(src: &Path, dir: &Path, files: &mut BTreeMap<String, String>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("could not read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect(src, &path, files)?;
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src).map_err(|e| e.to_string())?;
        let mut parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        match parts.last().map(String::as_str) {
            Some("mod") => {
                parts.pop();
            }
            Some("lib" | "main") if parts.len() == 1 => parts.clear(),
            // Another binary's root (src/bin/…) is a crate of its own.
            _ if parts.first().is_some_and(|p| p == "bin") => continue,
            _ => {}
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("could not read {}: {e}", path.display()))?;
        let module = join(&parts);
        // A crate with both lib.rs and main.rs: main.rs is a separate crate that uses the
        // library by name, so only lib.rs is the root.
        if module.is_empty() && files.contains_key("") && relative.ends_with("main.rs") {
            continue;
        }
        files.insert(module, text);
    }
    Ok(())
}

/// The text without comments, string literals and character literals, so that a path in a
/// comment or a message is not read as a use.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !ident_char(chars.get(i.wrapping_sub(1)).copied())
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a): only the
            // literal is dropped.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Every path in the text with at least two segments, as its segments, each with whether it
/// is written inside an inline module; a `use` tree is expanded into its paths.
fn paths(text: &str) -> Vec<(Vec<String>, bool)> {
    let inline = inline_module_ranges(text);
    let inside = |at: usize| {
        inline
            .iter()
            .any(|(start, end)| (*start..*end).contains(&at))
    };
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if starts_word(text, i, "use") {
            let end = text[i..].find(';').map_or(text.len(), |e| i + e);
            for path in expand_use(&text[i + 3..end]) {
                if path.len() >= 2 {
                    out.push((path, inside(i)));
                }
            }
            i = end;
            continue;
        }
        if ident_start(bytes[i]) && (i == 0 || !(ident_byte(bytes[i - 1]) || bytes[i - 1] == b':'))
        {
            let (path, end) = read_path(text, i);
            if path.len() >= 2 {
                out.push((path, inside(i)));
            }
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    out
}

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn starts_word(text: &str, at: usize, word: &str) -> bool {
    let bytes = text.as_bytes();
    text[at..].starts_with(word)
        && (at == 0 || !ident_byte(bytes[at - 1]))
        && bytes.get(at + word.len()).is_none_or(|b| !ident_byte(*b))
}

/// Reads `a::b::c` from `at`; whitespace around `::` is allowed.
fn read_path(text: &str, at: usize) -> (Vec<String>, usize) {
    let bytes = text.as_bytes();
    let mut segments = Vec::new();
    let mut i = at;
    loop {
        let start = i;
        while i < bytes.len() && ident_byte(bytes[i]) {
            i += 1;
        }
        if start == i {
            break;
        }
        segments.push(text[start..i].to_string());
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if text[j..].starts_with("::") {
            j += 2;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < bytes.len() && ident_start(bytes[j]) {
                i = j;
                continue;
            }
        }
        break;
    }
    (segments, i)
}

/// The paths of a `use` tree: `crate::{a::{b, c}, d}` → `crate::a::b`, `crate::a::c`,
/// `crate::d`.
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for item in split_top(tree, ',') {
        if item.is_empty() {
            continue;
        }
        let depth = prefix.len();
        let mut rest = item;
        loop {
            if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                expand_into(inner, prefix, out);
                break;
            }
            match rest.find("::") {
                Some(at) if !rest[..at].contains('{') => {
                    prefix.push(rest[..at].to_string());
                    rest = &rest[at + 2..];
                }
                _ => {
                    let name = rest.split(" as ").next().unwrap_or(rest);
                    let name = name.split("as").next().unwrap_or(name);
                    let mut path = prefix.clone();
                    if name != "*" && name != "self" && !name.is_empty() {
                        path.push(name.to_string());
                    }
                    out.push(path);
                    break;
                }
            }
        }
        prefix.truncate(depth);
    }
}

/// Splits at `sep` outside braces.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The byte ranges of inline modules' bodies (`mod name { … }`).
fn inline_module_ranges(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if starts_word(text, i, "mod") {
            let (name, after) = read_path(text, i + 3 + skip_space(&text[i + 3..]));
            let open = after + skip_space(&text[after..]);
            if name.len() == 1 && bytes.get(open) == Some(&b'{') {
                let mut depth = 0;
                let mut j = open;
                while j < bytes.len() {
                    match bytes[j] {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                ranges.push((open, j));
                i = open + 1;
                continue;
            }
        }
        i += 1;
    }
    ranges
}

fn skip_space(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

/// What the root re-exports: item name → the module path it comes from (`pub use a::b::C`
/// → `C` ↦ `a::b`, as far as the path names modules; the caller checks).
fn reexports(root: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut i = 0;
    while let Some(at) = root[i..].find("pub use") {
        let start = i + at + "pub use".len();
        let end = root[start..].find(';').map_or(root.len(), |e| start + e);
        for path in expand_use(&root[start..end]) {
            if let Some((item, from)) = path.split_last() {
                let from: Vec<String> = from
                    .iter()
                    .filter(|s| s.as_str() != "crate" && s.as_str() != "self")
                    .cloned()
                    .collect();
                if !from.is_empty() {
                    map.insert(item.clone(), join(&from));
                }
            }
        }
        i = end;
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        Graph::from_files(
            &files
                .iter()
                .map(|(m, t)| (m.to_string(), t.to_string()))
                .collect(),
        )
    }

    fn uses(g: &Graph, module: &str) -> Vec<String> {
        g.uses[module].iter().cloned().collect()
    }

    #[test]
    fn use_trees_and_body_paths_are_read() {
        let g = graph(&[
            ("", "pub mod a; pub mod b; pub mod c; pub use c::Thing;"),
            (
                "a",
                "use crate::{b::{X, Y as Z}, self};\nfn f() { crate::Thing::new(); }",
            ),
            (
                "b",
                "// crate::a::X in a comment\nconst S: &str = \"crate::a\";",
            ),
            ("c", "pub struct Thing;"),
        ]);
        assert_eq!(uses(&g, "a"), vec!["b", "c"]);
        assert!(
            uses(&g, "b").is_empty(),
            "comments and strings are not uses"
        );
        assert!(g.circles().is_empty());
    }

    #[test]
    fn a_circle_through_a_third_module_is_found() {
        let g = graph(&[
            ("", "mod a; mod b; mod c;"),
            ("a", "use crate::b::X;"),
            ("b", "fn f() -> crate::c::Y { todo() }"),
            ("c", "use crate::a;\nfn g() { a::go(); }"),
        ]);
        assert_eq!(
            g.circles(),
            vec![vec!["a".to_string(), "b".into(), "c".into()]]
        );
    }

    #[test]
    fn a_child_that_imports_from_its_parent_closes_a_circle() {
        let g = graph(&[
            ("", "mod app;"),
            (
                "app",
                "mod editor; pub struct Link; fn f() { editor::page(); }",
            ),
            ("app::editor", "use super::Link;\npub fn page() {}"),
        ]);
        assert_eq!(uses(&g, "app"), vec!["app::editor"]);
        assert_eq!(uses(&g, "app::editor"), vec!["app"]);
        assert_eq!(
            g.circles(),
            vec![vec!["app".to_string(), "app::editor".into()]]
        );
    }

    #[test]
    fn tests_that_use_their_own_module_are_no_circle() {
        let g = graph(&[
            ("", "mod a; mod b;"),
            (
                "a",
                "pub fn f() {}\n#[cfg(test)]\nmod tests { use super::*; use crate::b::helper; }",
            ),
            ("b", "pub fn helper() {}"),
        ]);
        assert_eq!(uses(&g, "a"), vec!["b"]);
        assert!(uses(&g, "b").is_empty());
        assert!(g.circles().is_empty());
    }

    #[test]
    fn lifetimes_and_char_literals_do_not_hide_paths() {
        let g = graph(&[
            ("", "mod a; mod b;"),
            (
                "a",
                "fn f<'x>(s: &'x str) -> char { let _ = crate::b::g(); '{' }",
            ),
            ("b", "pub fn g() {}"),
        ]);
        assert_eq!(uses(&g, "a"), vec!["b"]);
    }

    #[test]
    fn the_workspace_has_no_circle() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        for krate in CRATES {
            let g = Graph::read(&root.join(krate).join("src")).unwrap();
            assert_eq!(
                g.circles(),
                Vec::<Vec<String>>::new(),
                "the modules of {krate} import each other in a circle"
            );
        }
    }
}
