fn main() {
    std::process::exit(promptgate::cli::main());
}
