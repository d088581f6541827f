//! The anonymous student session (`/api/session`) and the instructor's sign-in
//! (`/api/instructor/session`).

use serde::{Deserialize, Serialize};

/// The student of this browser, as anyone may see it: the public id and the display name.
/// The session's secret is only ever in its cookie.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionBody {
    /// The student's public id, the one graders see. It is not the session's secret and
    /// cannot be used to open the session.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "s-0f8e3c2a9b7d4e61a5c3b2d1e0f9a8b7")
    )]
    pub student: String,
    pub display_name: Option<String>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdate {
    /// Up to 80 characters, none of them a control character; null, empty or only spaces
    /// removes it. Spaces around it are dropped.
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 80, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")
    )]
    pub display_name: Option<String>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    /// A grader token from `pipeline-builder token create`.
    pub token: String,
}

/// Who is signed in at `/instructor`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instructor {
    /// The grader token's name.
    pub name: String,
    /// The staff account the token acts for; absent for a server administrator's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// True for a server administrator's token, which may do everything in every class.
    #[serde(default)]
    pub administrator: bool,
    /// True when the token may only read.
    #[serde(default)]
    pub read_only: bool,
}
