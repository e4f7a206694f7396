//! No file of any crate imports, through other files or directly, a file that imports it.
//!
//! Each crate's files are the rooms of one floor plan: a module file (`a.rs`, `a/mod.rs`) and
//! what it names of the crate's other files (`use crate::…`, `use super::…`, a child's
//! `use a::b::…`, and the same paths written inline, `crate::a::f()`) are its arrows. A circle
//! of arrows is two files that cannot be read, changed or tested one without the other; the
//! fix is the shared thing moved down into a file both import, or the arrow turned round.
//!
//! What is not an arrow: a parent declaring its children (`mod child;`) and re-exporting them
//! (`pub use child::Thing;`) — that is the parent's face, not a use — and the unit tests at the
//! end of a file (`#[cfg(test)] mod tests`), which may reach anywhere. Comments and strings
//! are read past. This reads the sources as text, as `fabric/tests/layers.rs` does for the
//! fabric's layers; it knows Rust's paths, not its macros, so a path built inside a macro's
//! arguments is read like any other.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::workspace::{members, root};

/// `text` with comments, string and character literals blanked out (lines kept).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
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
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&ch) => out.push(blank(ch)),
                }
                j += 1;
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    out.push(blank(ch));
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\'') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
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

/// The code before the file's unit tests (`#[cfg(test)]` then `mod`).
fn before_tests(code: &str) -> &str {
    let mut at = 0;
    while let Some(found) = code[at..].find("#[cfg(test)]") {
        let start = at + found;
        let after = code[start + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") || after.starts_with("pub mod ") {
            return &code[..start];
        }
        at = start + 1;
    }
    code
}

/// One source file of a crate: its module path (`["ior", "phase"]`) and its code.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    code: String,
}

/// The crate's module files under `src`, by module path.
fn modules(src: &Path) -> Vec<Module> {
    let mut found = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let file = entry.unwrap().path();
            if file.is_dir() {
                if file.file_name().is_some_and(|n| n != "bin") {
                    stack.push(file);
                }
                continue;
            }
            if file.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = file.strip_prefix(src).unwrap();
            let mut path: Vec<String> = relative
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if path.last().is_some_and(|l| l == "tests") {
                continue; // a file of unit tests (`#[cfg(test)] mod tests;`)
            }
            if path.last().is_some_and(|l| l == "mod") || path == ["lib"] || path == ["main"] {
                path.pop();
            }
            let code = code_only(&fs::read_to_string(&file).unwrap());
            let code = before_tests(&code).to_owned();
            found.push(Module { path, file, code });
        }
    }
    found
}

/// The paths a `use` tree names, expanded: `a::{b, c::{D, E as F}}` → `a::b`, `a::c::D`,
/// `a::c::E`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    fn go(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let head: Vec<String> = tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut base = prefix.to_vec();
            base.extend(head);
            let mut depth = 0;
            let mut start = 0;
            for (i, ch) in inner.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        go(&base, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            go(&base, &inner[start..], out);
            return;
        }
        let tree = tree.split(" as ").next().unwrap_or(tree);
        let mut path = prefix.to_vec();
        path.extend(
            tree.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*" && *s != "self")
                .map(str::to_owned),
        );
        out.push(path);
    }
    let mut out = Vec::new();
    go(&[], tree, &mut out);
    out
}

/// An identifier's characters.
fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path the code names that may be the crate's own: the `use` trees (with whether each
/// is a `pub use`), and the inline paths `x::y::z` whose first segment is a word followed by
/// `::`.
fn paths(code: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let text: String = bytes.iter().collect();
    // `use` statements.
    let mut uses = Vec::new();
    let mut at = 0;
    while let Some(found) = text[at..].find("use ") {
        let start = at + found;
        at = start + 4;
        let before = text[..start].chars().next_back();
        if before.is_some_and(ident_char) {
            continue;
        }
        let Some(end) = text[at..].find(';') else {
            break;
        };
        let public =
            text[..start].trim_end().ends_with("pub") || text[..start].trim_end().ends_with(')'); // pub(crate) use
        let tree = &text[at..at + end];
        for path in expand(tree) {
            out.push((public, path));
        }
        uses.push(start..at + end);
        at += end;
    }
    // Inline paths outside the `use` statements.
    let mut i = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    while i < chars.len() {
        let (pos, c) = chars[i];
        let starts_word = ident_char(c)
            && !c.is_ascii_digit()
            && (i == 0 || !(ident_char(chars[i - 1].1) || chars[i - 1].1 == ':'));
        if !starts_word || uses.iter().any(|r| r.contains(&pos)) {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let begin = j;
            while j < chars.len() && ident_char(chars[j].1) {
                j += 1;
            }
            let word: String = chars[begin..j].iter().map(|(_, c)| c).collect();
            segments.push(word);
            if j + 1 < chars.len() && chars[j].1 == ':' && chars[j + 1].1 == ':' {
                j += 2;
                if j < chars.len() && ident_char(chars[j].1) {
                    continue;
                }
            }
            break;
        }
        if segments.len() > 1 {
            out.push((false, segments));
        }
        i = j.max(i + 1);
    }
    out
}

/// The module file a path names, from the module at `from`: `crate::a::b::X`, `super::X`,
/// `self::c::X`, or `c::X` for a child `c` of `from`. None when the path leaves the crate.
fn resolve(from: &[String], path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let (mut absolute, rest) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (from.to_vec(), &path[1..]),
        "super" => {
            let mut base = from.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            (base, rest)
        }
        first => {
            let mut child = from.to_vec();
            child.push(first.to_owned());
            if !known.contains(&child) {
                return None;
            }
            (from.to_vec(), path)
        }
    };
    absolute.extend(rest.iter().cloned());
    // The deepest module file that is a prefix of the path.
    (0..=absolute.len())
        .rev()
        .map(|n| absolute[..n].to_vec())
        .find(|prefix| known.contains(prefix))
}

/// The arrows between one crate's files: from → to → the names taken.
type Arrows = BTreeMap<Vec<String>, BTreeMap<Vec<String>, BTreeSet<String>>>;

fn arrows(modules: &[Module]) -> Arrows {
    let known: BTreeSet<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    let mut arrows = Arrows::new();
    for module in modules {
        for (public, path) in paths(&module.code) {
            let Some(to) = resolve(&module.path, &path, &known) else {
                continue;
            };
            if to == module.path {
                continue;
            }
            // A parent's `pub use child::…` is its face, not a use.
            let is_child = to.len() > module.path.len() && to.starts_with(&module.path);
            if public && is_child {
                continue;
            }
            let name = path.last().cloned().unwrap_or_default();
            arrows
                .entry(module.path.clone())
                .or_default()
                .entry(to)
                .or_default()
                .insert(name);
        }
    }
    arrows
}

/// The strongly connected groups of more than one file (Tarjan's algorithm).
fn circles(arrows: &Arrows) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        arrows: &'a Arrows,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        on_stack: BTreeSet<Vec<String>>,
        stack: Vec<Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, node: &Vec<String>) {
            let n = self.index.len();
            self.index.insert(node.clone(), n);
            self.low.insert(node.clone(), n);
            self.stack.push(node.clone());
            self.on_stack.insert(node.clone());
            let next: Vec<Vec<String>> = self
                .arrows
                .get(node)
                .map(|to| to.keys().cloned().collect())
                .unwrap_or_default();
            for to in next {
                if !self.index.contains_key(&to) {
                    self.visit(&to);
                    let low = self.low[node].min(self.low[&to]);
                    self.low.insert(node.clone(), low);
                } else if self.on_stack.contains(&to) {
                    let low = self.low[node].min(self.index[&to]);
                    self.low.insert(node.clone(), low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                loop {
                    let top = self.stack.pop().unwrap();
                    self.on_stack.remove(&top);
                    let done = &top == node;
                    group.push(top);
                    if done {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in arrows.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found
}

/// Each circle of every crate, in words: its files and the names that tie them.
fn circles_in(root: &Path, member: &Path) -> Vec<String> {
    let src = member.join("src");
    if !src.is_dir() {
        return Vec::new();
    }
    let modules = modules(&src);
    let file_of: BTreeMap<Vec<String>, PathBuf> = modules
        .iter()
        .map(|m| {
            (
                m.path.clone(),
                m.file.strip_prefix(root).unwrap().to_path_buf(),
            )
        })
        .collect();
    let arrows = arrows(&modules);
    circles(&arrows)
        .into_iter()
        .map(|group| {
            let mut words = format!("a circle of {} files:", group.len());
            for from in &group {
                for (to, names) in &arrows[from] {
                    if group.contains(to) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        words += &format!(
                            "\n  {} -> {}: {}",
                            file_of[from].display(),
                            file_of[to].display(),
                            names.join(", ")
                        );
                    }
                }
            }
            words
        })
        .collect()
}

#[test]
fn no_crate_has_a_circle_of_imports_among_its_files() {
    let root = root();
    let members = members(&root);
    assert!(members.len() > 10, "the workspace's members: {members:?}");
    let found: Vec<String> = members
        .iter()
        .flat_map(|member| circles_in(&root, member))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The checker itself: a planted circle is found, a parent's face and its tests are not.
#[test]
fn a_planted_circle_is_found_and_a_parents_face_is_not() {
    let dir = std::env::temp_dir().join(format!("iopath-circles-{}", std::process::id()));
    let src = dir.join("src");
    fs::create_dir_all(src.join("ior")).unwrap();
    let write = |name: &str, text: &str| fs::write(src.join(name), text).unwrap();
    write(
        "lib.rs",
        "pub mod ior;\npub mod a;\npub mod b;\npub use ior::Phase;\n",
    );
    // The parent re-exports its child and the child names the parent: a face, no circle.
    write(
        "ior/mod.rs",
        "mod phase;\npub use phase::Phase;\npub struct Params;\n",
    );
    write(
        "ior/phase.rs",
        "use super::Params;\n// use crate::a::A; a comment\nconst S: &str = \"crate::b::B\";\npub struct Phase(Params);\n",
    );
    // a's unit tests may reach b; b names a inline.
    write(
        "a.rs",
        "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
    );
    write("b.rs", "pub fn b() -> crate::a::A { crate::a::A }\n");
    let root = dir.clone();
    assert_eq!(circles_in(&root, &dir), Vec::<String>::new());
    // Now a takes b's name outside its tests: a circle.
    write("a.rs", "use crate::b::{self as other, b};\npub struct A;\n");
    let found = circles_in(&root, &dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        ["a circle of 2 files:\n  src/a.rs -> src/b.rs: b\n  src/b.rs -> src/a.rs: A"]
    );
}
