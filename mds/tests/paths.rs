//! Path parsing: what is a path, and the clear error for each thing that is not.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_mds::MdsPath;
use iopath_mds::error::errno::{EINVAL, ENAMETOOLONG};
use iopath_mds::limits::{NAME_LEN_MAX_BYTES, PATH_DEPTH_MAX, PATH_LEN_MAX_BYTES};

#[test]
fn good_paths_parse_into_components() {
    let cases: &[(&str, &[&str])] = &[
        ("/", &[]),
        ("/a", &["a"]),
        ("/a/b/c", &["a", "b", "c"]),
        ("/.hidden/..x/x..", &[".hidden", "..x", "x.."]),
        ("/ünï/c ode/a\tb", &["ünï", "c ode", "a\tb"]),
    ];
    for (text, components) in cases {
        let path = MdsPath::parse(text).unwrap();
        assert_eq!(path.components(), *components, "{text}");
        assert_eq!(path.to_string(), *text);
        assert_eq!(path.is_root(), components.is_empty());
    }
    let path = MdsPath::parse("/a/b/c").unwrap();
    let (parent, name) = path.split_last().unwrap();
    assert_eq!((parent.to_string().as_str(), name), ("/a/b", "c"));
    assert_eq!(path.prefix(1).to_string(), "/a");
    assert!(MdsPath::root().split_last().is_none());
}

#[test]
fn bad_paths_are_refused_clearly() {
    let long_name = "n".repeat(NAME_LEN_MAX_BYTES + 1);
    let deep = "/d".repeat(PATH_DEPTH_MAX + 1);
    let long = format!("/{}", "x/".repeat(PATH_LEN_MAX_BYTES / 2));
    let cases: Vec<(String, u32, &str)> = vec![
        (String::new(), EINVAL, "the path is empty"),
        ("a/b".into(), EINVAL, "not absolute"),
        ("//".into(), EINVAL, "empty component"),
        ("/a//b".into(), EINVAL, "empty component"),
        ("/a/".into(), EINVAL, "empty component"),
        ("/a/./b".into(), EINVAL, "'.' and '..' are not allowed"),
        ("/..".into(), EINVAL, "'.' and '..' are not allowed"),
        ("/a/\0".into(), EINVAL, "NUL"),
        (
            format!("/{long_name}"),
            ENAMETOOLONG,
            "a component's length in bytes is 256, the maximum is 255",
        ),
        (
            deep,
            ENAMETOOLONG,
            "number of components is 65, the maximum is 64",
        ),
        (
            long,
            ENAMETOOLONG,
            "path length in bytes is 4097, the maximum is 4096",
        ),
    ];
    for (text, errno, message) in cases {
        let error = MdsPath::parse(&text).unwrap_err();
        assert_eq!(error.errno(), errno, "{text:?}: {error}");
        assert!(error.to_string().contains(message), "{text:?}: {error}");
        // Refused paths are quoted, but never more than 128 bytes of them.
        assert!(error.to_string().len() < 300, "{error}");
    }
    let name_max = format!("/{}", "n".repeat(NAME_LEN_MAX_BYTES));
    MdsPath::parse(&name_max).unwrap();
    MdsPath::parse(&"/d".repeat(PATH_DEPTH_MAX)).unwrap();
}
