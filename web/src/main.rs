//! The student's module (`index.html`): the catalogue, the scenario pages and the join page.
//! Everything else is in the library.

fn main() {
    #[cfg(target_arch = "wasm32")]
    web::app::mount_student();
}
