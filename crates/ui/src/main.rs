//! Mounts the playground; everything else lives in the library.

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(tinygpt_ui::App);
}
