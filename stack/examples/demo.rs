//! The whole I/O path in one call: start the default preset in this process, write and read
//! back through it, and print what happened (what `iopath demo` does).
//!
//! `cargo run --release -p iopath-stack --example demo -- [SIZE]` (default 128m).

#[tokio::main]
async fn main() -> Result<(), iopath_stack::StackError> {
    let size = match std::env::args().nth(1) {
        Some(text) => iopath_fabric::units::parse_size(&text).map_err(|why| {
            iopath_stack::StackError::BadOption {
                option: "SIZE".into(),
                why,
            }
        })?,
        None => 128 << 20,
    };
    let config = iopath_stack::demo::DemoConfig {
        size,
        ..iopath_stack::demo::DemoConfig::default()
    };
    iopath_stack::demo::run(&config, &mut std::io::stdout())
        .await
        .map(drop)
}
