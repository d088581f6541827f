//! Mounts the app; everything else is in the library.

fn main() {
    #[cfg(target_arch = "wasm32")]
    web::app::mount();
}
