//! `iopath lfs df` against a running stack of processes: a row per storage target, with the
//! figures the targets' file systems report, and their sum.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;
use common::Stack;

const STACK: &str = r#"name = "df-test"
description = "two storage servers of two targets"

[[networks]]
name = "o2ib0"

[[nodes]]
name = "c"
role = "client"
nids = { o2ib0 = 100 }

[[nodes]]
name = "oss"
role = "oss"
count = 2
nids = { o2ib0 = 10 }
targets = 2

[[nodes]]
name = "mds"
role = "mds"
nids = { o2ib0 = 1 }
"#;

/// statvfs(3) of `dir`: (1 KiB blocks, 1 KiB blocks available).
fn statvfs_kib(dir: &std::path::Path) -> (u64, u64) {
    let out = std::process::Command::new("stat")
        .args(["-f", "-c", "%S %b %a"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0] * v[1] / 1024, v[0] * v[2] / 1024)
}

#[test]
fn lfs_df_lists_every_target_with_its_file_systems_figures_and_their_sum() {
    let stack = Stack::start(STACK);
    let out = stack.lfs(&["df"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("OST"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        [
            "OST0000_UUID",
            "OST0001_UUID",
            "OST0002_UUID",
            "OST0003_UUID"
        ],
        "{text}"
    );
    // Every target lives on this machine's file system under the stack's directory: its
    // size is that file system's.
    let (total_kib, _) = statvfs_kib(&stack.storage());
    for row in &rows {
        assert_eq!(row[1].parse::<u64>().unwrap(), total_kib, "{text}");
    }
    let summary: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("filesystem_summary:"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(summary[1].parse::<u64>().unwrap(), 4 * total_kib);
    // -h: the same sizes with a unit, `252.0G`: every size column of every target row.
    let human = String::from_utf8(stack.lfs(&["df", "-h"]).stdout).unwrap();
    let rows: Vec<&str> = human.lines().filter(|l| l.starts_with("OST")).collect();
    assert_eq!(rows.len(), 4, "{human}");
    for row in rows {
        for size in row.split_whitespace().skip(1).take(3) {
            let (number, unit) = size.split_at(size.len() - 1);
            assert!(
                "BKMGTP".contains(unit) && number.parse::<f64>().is_ok(),
                "{size:?} in {row:?}"
            );
        }
    }
    stack.stop();
}
