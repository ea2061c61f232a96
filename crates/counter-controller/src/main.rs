//! The `counter-controller` binary: parses flags, sets up logging, runs; errors end as one line.

use clap::Parser;
use counter_controller::cli::Cli;

// The system allocator: measured on the convergence bench, mimalloc nearly doubled the
// controller's peak memory (README, "Benchmarks"). The sandbox's own binary, `kube-sandbox`,
// keeps mimalloc for its speed.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    kube_manager::logging::init_logging(args.log_format());
    match args.execute().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("counter-controller: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
