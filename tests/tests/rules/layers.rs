//! The workspace's crates form floors, listed bottom up in `docs/ARCHITECTURE.md`'s *Layers*
//! table: each crate may depend only on crates listed before it. This test reads the table and
//! every member's `Cargo.toml`, so a dependency that points up a floor fails here (the
//! fabric's own modules are held to their order by `fabric/tests/layers.rs`, and every
//! crate's files to having no circle by `circles.rs`).
//!
//! Dev-dependencies are held to the same rule, with no exception: a crate's tests that need a
//! whole stack (`iopath-stack`'s `TestStack`, which sits above the client and the fyod) live
//! above it, here in `tests/tests/client` and `tests/tests/forwarder`.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::workspace::{members, root};

/// The package names of the *Layers* table's rows, bottom floor first (`` | `fabric` | ``
/// is `iopath-fabric`; `iopath` is itself).
fn floors(architecture: &str) -> Vec<String> {
    let table = architecture
        .split("## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a Layers section");
    table
        .lines()
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(|name| {
            if name == "iopath" {
                name.to_owned()
            } else {
                format!("iopath-{name}")
            }
        })
        .collect()
}

/// A manifest's package name and its workspace dependencies, normal and dev.
struct Manifest {
    name: String,
    dependencies: Vec<String>,
    dev_dependencies: Vec<String>,
}

fn manifest(text: &str) -> Manifest {
    let mut name = String::new();
    let (mut dependencies, mut dev_dependencies) = (Vec::new(), Vec::new());
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = match line {
                "[package]" => "package",
                "[dependencies]" => "dependencies",
                "[dev-dependencies]" => "dev",
                _ => "",
            };
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or_default();
        match section {
            "package" if key == "name" => {
                name = line.split('"').nth(1).unwrap_or_default().to_owned();
            }
            "dependencies" if key.starts_with("iopath") => dependencies.push(key.to_owned()),
            "dev" if key.starts_with("iopath") => dev_dependencies.push(key.to_owned()),
            _ => {}
        }
    }
    Manifest {
        name,
        dependencies,
        dev_dependencies,
    }
}

/// Every dependency that points up (or to a crate the table does not list), in words.
fn arrows_up(floors: &[String], manifests: &[Manifest]) -> Vec<String> {
    let floor = |name: &str| floors.iter().position(|f| f == name);
    let mut found = Vec::new();
    for m in manifests {
        let Some(own) = floor(&m.name) else {
            found.push(format!("{} is not in the Layers table", m.name));
            continue;
        };
        let kinds = [("", &m.dependencies), ("dev-", &m.dev_dependencies)];
        for (kind, deps) in kinds {
            for dep in deps.iter() {
                match floor(dep) {
                    None => found.push(format!(
                        "{dep} ({} depends on it) is not in the table",
                        m.name
                    )),
                    Some(at) if at >= own && !(kind == "dev-" && *dep == m.name) => {
                        found.push(format!(
                            "{} {kind}depends on {dep}, listed above it",
                            m.name
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

#[test]
fn no_crate_depends_on_one_above_it() {
    let root = root();
    let architecture = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let floors = floors(&architecture);
    let manifests: Vec<Manifest> = members(&root)
        .iter()
        .map(|member| manifest(&std::fs::read_to_string(member.join("Cargo.toml")).unwrap()))
        .collect();
    assert_eq!(
        manifests.len(),
        floors.len(),
        "a row per member: {floors:?}"
    );
    let found = arrows_up(&floors, &manifests);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_planted_arrow_up_is_found() {
    let floors: Vec<String> = ["iopath-proto", "iopath-fabric", "iopath-client"]
        .map(String::from)
        .to_vec();
    let planted = manifest(
        "[package]\nname = \"iopath-fabric\"\n\n[dependencies]\niopath-proto.workspace = true\n\
         iopath-client = { path = \"client\" }\ntokio.workspace = true\n\n[dev-dependencies]\n\
         iopath-fabric.workspace = true\n",
    );
    assert_eq!(planted.dependencies, ["iopath-proto", "iopath-client"]);
    assert_eq!(
        arrows_up(&floors, &[planted]),
        ["iopath-fabric depends on iopath-client, listed above it"]
    );
}
