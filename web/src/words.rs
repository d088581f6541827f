//! What the canvas says about kinds and options, in the chapter's words (the labels are
//! `shared::words`, so the CLI and the notes under a verdict say the same).

pub use shared::words::{
    kind_line, kind_title, node_summary, option_title, value_label, value_words,
};
