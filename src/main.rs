//! The `leakgate` binary: everything lives in the library; see `commands/`.

fn main() -> std::process::ExitCode {
    leakgate::commands::main()
}
