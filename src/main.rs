//! The `leakgate` binary: everything lives in the library; see `app.rs`.

fn main() {
    std::process::exit(leakgate::app::main_exit());
}
