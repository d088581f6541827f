//! The staff module (`staff.html`): the instructor's pages and the author page. A module of
//! its own, so that the module every student loads carries none of their code.

fn main() {
    #[cfg(target_arch = "wasm32")]
    web::app::mount_staff();
}
