//! The `topo` command line: parsing and the machine-readable outputs.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use clap::Parser;
use iopath_plot::check::Drawing;

use super::{TopoCommand, run_to};

#[derive(Parser, Debug)]
struct Topo {
    #[command(subcommand)]
    command: TopoCommand,
}

fn run(args: &[&str]) -> anyhow::Result<String> {
    let topo = Topo::try_parse_from(std::iter::once("topo").chain(args.iter().copied()))?;
    let mut out = Vec::new();
    run_to(topo.command, &mut out)?;
    Ok(String::from_utf8(out)?)
}

#[test]
fn titan_routes_as_json_list() {
    let text = run(&[
        "routes",
        "--preset",
        "titan-spider2",
        "--client",
        "3,5,7",
        "--json",
    ])
    .unwrap();
    let routes: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = routes.as_array().unwrap();
    assert_eq!(list.len(), 108);
    for r in list {
        assert!(r["net"].as_str().unwrap().starts_with("o2ib2"));
        assert!(r["gateway"].as_str().unwrap().contains("@gni1"));
        assert!(matches!(r["hops"].as_u64(), Some(1 | 10)));
    }
    let text = run(&[
        "routes",
        "--preset",
        "titan-spider2",
        "--client",
        "3,5,7",
        "--lnetctl",
    ])
    .unwrap();
    assert_eq!(text.lines().count(), 108);
    assert!(
        text.lines()
            .all(|l| l.starts_with("lnetctl route add --net o2ib2"))
    );
}

#[test]
fn jaguar_routes_and_layouts() {
    let text = run(&[
        "routes",
        "--preset",
        "jaguar-spider",
        "--client",
        "0,0,0",
        "--config",
        "projection",
        "--csv",
    ])
    .unwrap();
    assert_eq!(text.lines().count(), 1 + 192);
    assert!(
        run(&["layout", "--preset", "titan-spider2"])
            .unwrap()
            .contains("rtr1a-1")
    );
    let csv = run(&["layout", "--preset", "titan-spider2", "--csv"]).unwrap();
    assert_eq!(csv.lines().count(), 1 + 432);
    assert!(
        run(&["layout", "--preset", "jaguar-spider", "--json"])
            .unwrap()
            .contains("\"leaf\"")
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let err = run(&["routes", "--preset", "titan-spider2", "--client", "99,0,0"]).unwrap_err();
    assert!(format!("{err:#}").contains("outside"), "{err:#}");
    let err = run(&["routes", "--preset", "nope", "--client", "1,2,3"]).unwrap_err();
    assert!(format!("{err:#}").contains("unknown preset"));
    let err = run(&["routes", "--client", "1,2"]).unwrap_err();
    assert!(format!("{err:#}").contains("X,Y,Z"));
    assert!(run(&["analyze", "--preset", "titan-spider2"]).is_err());
    assert!(run(&["analyze", "--oss", "0"]).is_err());
}

#[test]
fn analyze_writes_plots_and_csv() {
    let dir = std::env::temp_dir().join(format!("iopath-topo-test-{}", std::process::id()));
    let dir_text = dir.to_string_lossy().to_string();
    let csv = run(&[
        "analyze",
        "--oss",
        "8",
        "--runs",
        "2",
        "--confined",
        "1",
        "--csv",
        "--out-dir",
        &dir_text,
    ])
    .unwrap();
    assert_eq!(csv.lines().count(), 3);
    assert!(csv.lines().nth(1).unwrap().starts_with("default,56,"));
    for f in ["link_histogram.csv", "completion_times.csv"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(!text.is_empty(), "{f}");
    }
    for f in ["link_histogram.svg", "completion_cdf.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        let drawing = Drawing::read_clean(&svg).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(drawing.series.len(), 2, "{f}: default and placed");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
