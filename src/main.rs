fn main() -> std::process::ExitCode {
    reckon::cli::main()
}
