//! `tinygpt`: train, sample, evaluate, gate and benchmark on any wgpu
//! backend (Vulkan, Metal, DX12), or on the CPU reference with `--cpu`.

mod args;
mod bench;
mod bench_attention;
mod clock;
mod commands;
mod files;
mod floor;
mod profile;
mod train;

use clap::Parser;

fn main() {
    let cli = args::Cli::parse();
    if let Err(e) = pollster::block_on(commands::run(cli)) {
        // One clear line and a non-zero exit, never a panic trace.
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
