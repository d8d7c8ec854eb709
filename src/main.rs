//! The `leakgate` binary: everything lives in the library; see `app.rs`.

fn main() {
    std::process::exit(leakgate::commands::main_exit());
}
