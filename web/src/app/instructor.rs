//! The instructor's pages: signing in with a grader token, the list of classes, a class's
//! dashboard (the matrix, progress per scenario, the requirements missed most), a student's
//! attempts, and one attempt's design read-only on the canvas with its replay.
//!
//! The token is sent once to the server, which keeps it in an HttpOnly cookie; it is never
//! stored in the browser's storage nor put in a URL. The answers are read as the wire types
//! of `shared::wire`, the ones the server writes them from.

use std::sync::Arc;

use leptos::prelude::*;
use shared::wire::classes::{
    CellState, ClassBody, ClassUpdate, Deadlines, DeadlinesUpdate, Extension, ExtensionRequest,
    LatePolicy, Matrix, MemberUpdate, MissedScenario, NewClass, Preview, RegradeReport,
    RegradeRequest, StaffGrant, StaffMember, StaffRole, StudentAttempts, StudentRow,
};

use super::api::{self, grader};
use super::canvas_view::CanvasView;
use super::dom::load_once;
use super::page::Page;
use super::results::{ReplayPanel, ResultsPanel};
use super::router::{Link, Navigator};

/// An RFC 3339 time (in UTC, as the server writes every time) as the pages show it: the date
/// and the minute, and the zone.
fn when(at: &str) -> String {
    let minute: String = at.replace('T', " ").chars().take(16).collect();
    format!("{minute} UTC")
}

/// The value of the input `selector` of the page, emptied.
fn take_input(selector: &str) -> String {
    let input = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(selector).ok().flatten())
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(e).ok());
    match input {
        Some(input) => {
            let value = input.value();
            input.set_value("");
            value
        }
        None => String::new(),
    }
}

/// The value of the input `selector` of the page, left as it is.
fn input_value(selector: &str) -> String {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(selector).ok().flatten())
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(e).ok())
        .map(|i| i.value())
        .unwrap_or_default()
}

/// The value of the select `selector` of the page.
fn select_value(selector: &str) -> String {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(selector).ok().flatten())
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlSelectElement>(e).ok())
        .map(|s| s.value())
        .unwrap_or_default()
}

/// A path segment with what a URL would read otherwise percent-encoded.
fn encode(segment: &str) -> String {
    String::from(js_sys::encode_uri_component(segment))
}

const SIGN_IN: &str = "<h1>Instructor sign-in</h1><p>Sign in with a grader token (<code>pipeline-builder token create --name NAME</code> makes one). \
    The server keeps it in a cookie this page cannot read.</p><form class=\"sign-in\" id=\"sign-in\"><label for=\"grader-token\">Grader token</label> \
    <input id=\"grader-token\" type=\"password\" autocomplete=\"off\" required> <button class=\"primary\" type=\"submit\">Sign in</button></form>";

/// `/instructor`: the sign-in form, or the classes once signed in. One piece of markup whose
/// forms, buttons and links are handled where their events bubble up to. `who` is `None`
/// while loading, the empty name when nobody is signed in.
#[component]
pub fn InstructorHome() -> impl IntoView {
    let nav = expect_context::<Navigator>();
    let who = RwSignal::new(None::<String>);
    let table = RwSignal::new(None::<String>);
    let error = RwSignal::new(String::new());
    let reload = move || {
        leptos::task::spawn_local(async move {
            match grader::get_answer::<Vec<ClassBody>>("/api/classes").await {
                Ok(list) => table.set(Some(classes_html(&list))),
                Err(e) => error.set(e.message),
            }
        });
    };
    leptos::task::spawn_local(async move {
        let name = grader::whoami().await.unwrap_or_default();
        if !name.is_empty() {
            reload();
        }
        who.set(Some(name));
    });
    let act = move |url: String, body: Option<NewClass>| {
        leptos::task::spawn_local(async move {
            match grader::send::<ClassBody>("POST", &url, body.as_ref()).await {
                Ok(_) => {
                    error.set(String::new());
                    reload();
                }
                Err(e) => error.set(e.message),
            }
        });
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if who.get_untracked().is_some_and(|n| n.is_empty()) {
            // The token leaves the page with the request: the field is emptied.
            let token = take_input("#grader-token");
            leptos::task::spawn_local(async move {
                match grader::sign_in(token.trim()).await {
                    Ok(name) => {
                        error.set(String::new());
                        reload();
                        who.set(Some(name));
                    }
                    Err(e) => error.set(e.message),
                }
            });
        } else {
            let name = take_input("#class-name");
            act("/api/classes".into(), Some(NewClass { name }));
        }
    };
    let on_click = move |ev: leptos::ev::MouseEvent| {
        if follow_link(&ev, nav) {
            return;
        }
        if let Some(url) = clicked(&ev, "data-post") {
            act(url, None);
        } else if clicked(&ev, "data-sign-out").is_some() {
            leptos::task::spawn_local(async move {
                grader::sign_out().await;
                who.set(Some(String::new()));
            });
        }
    };
    let html = move || {
        let error = error.get();
        let error = if error.is_empty() {
            String::new()
        } else {
            format!("<p class=\"error\" role=\"alert\">{}</p>", esc(&error))
        };
        match who.get() {
            None => "<p class=\"muted\" role=\"status\">Loading…</p>".to_string(),
            Some(name) if name.is_empty() => format!("{SIGN_IN}{error}"),
            Some(name) => format!(
                "<h1>Classes</h1><p class=\"muted\">Signed in as {}. <button class=\"link-button\" data-sign-out=\"1\">Sign out</button></p>\
                 <form class=\"new-class\" id=\"new-class\"><label for=\"class-name\">New class</label> \
                 <input id=\"class-name\" type=\"text\" maxlength=\"100\" required> <button class=\"primary\" type=\"submit\">Create the class</button></form>{error}{}",
                esc(&name),
                table.get().unwrap_or_else(|| "<p class=\"muted\" role=\"status\">Loading the classes…</p>".into())
            ),
        }
    };
    view! {
        <section class="page instructor" on:submit=on_submit on:click=on_click inner_html=html></section>
    }
}

/// A role as the pages name it; no role is a server administrator's token.
fn role_words(role: Option<StaffRole>) -> &'static str {
    match role {
        Some(StaffRole::Owner) => "Owner",
        Some(StaffRole::Ta) => "TA",
        Some(StaffRole::Viewer) => "Viewer",
        None => "Administrator",
    }
}

/// True when the caller may change the class: its owner, or a server administrator.
fn may_own(class: &ClassBody) -> bool {
    matches!(class.role, None | Some(StaffRole::Owner))
}

/// The classes as a table; each row's button names the route it posts to (`data-post`).
fn classes_html(list: &[ClassBody]) -> String {
    if list.is_empty() {
        return "<p>No class yet.</p>".to_string();
    }
    let mut out = String::from("<table class=\"data classes\"><caption>Your classes</caption><thead><tr><th scope=\"col\">Class</th><th scope=\"col\">Join code and page</th><th scope=\"col\">Members</th><th scope=\"col\">Owner</th><th scope=\"col\">Your role</th><th scope=\"col\">State</th></tr></thead><tbody>");
    for c in list {
        let id = esc(&c.id);
        let open = c.open;
        // Only the owner (or an administrator) may close or reopen it.
        let button = if may_own(c) {
            format!(
                " <button class=\"secondary small\" data-post=\"/api/classes/{id}/{}\">{}</button>",
                if open { "close" } else { "reopen" },
                if open { "Close" } else { "Reopen" },
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "<tr data-class=\"{id}\"><td><a href=\"/instructor/classes/{id}\">{}</a></td><td><code>{}</code> <span class=\"join-url\">{}</span></td><td>{}</td><td>{}</td><td class=\"role\">{}</td><td>{}{button}</td></tr>",
            esc(&c.name),
            esc(&c.join_code),
            esc(&c.join_url),
            c.members,
            esc(c.owner.as_deref().unwrap_or("—")),
            role_words(c.role),
            if open { "Open" } else { "Closed" },
        ));
    }
    out.push_str("</tbody></table>");
    out
}

/// The class's staff, and for its owner the form that gives an account a role.
fn staff_html(id: &str, class: &ClassBody, staff: &[StaffMember], said: &str) -> String {
    let mut out = String::from("<h2>Staff</h2>");
    if staff.is_empty() {
        out.push_str("<p class=\"muted\">No staff account has a role in this class yet.</p>");
    } else {
        out.push_str("<table class=\"data staff\"><caption>Who works on this class</caption><thead><tr><th scope=\"col\">Account</th><th scope=\"col\">Role</th><th scope=\"col\">Given by</th><th scope=\"col\">Since</th></tr></thead><tbody>");
        for m in staff {
            out.push_str(&format!(
                "<tr data-account=\"{a}\"><th scope=\"row\">{a}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
                role_words(Some(m.role)),
                esc(&m.granted_by),
                esc(&when(&m.granted_at)),
                a = esc(&m.account),
            ));
        }
        out.push_str("</tbody></table>");
    }
    if may_own(class) {
        let options: String = StaffRole::ALL
            .iter()
            .rev()
            .map(|r| {
                let selected = if *r == StaffRole::Ta { " selected" } else { "" };
                format!(
                    "<option value=\"{}\"{selected}>{}</option>",
                    r.as_str(),
                    role_words(Some(*r))
                )
            })
            .collect();
        out.push_str(&format!(
            "<form class=\"add-staff\" id=\"add-staff\"><label for=\"staff-account\">Staff account</label> \
             <input id=\"staff-account\" type=\"text\" maxlength=\"64\" required autocomplete=\"off\"> \
             <label for=\"staff-role\">Role</label> <select id=\"staff-role\">{options}</select> \
             <button class=\"primary\" type=\"submit\">Give the role</button> <span role=\"status\" class=\"muted\">{}</span></form>\
             <p class=\"exports\"><a href=\"/api/classes/{}/audit?format=csv\" download=\"audit.csv\">The audit log (CSV)</a>: every change staff made to the class.</p>",
            esc(said),
            esc(id),
        ));
    }
    out
}

/// The `data-` attribute `name` of the element an event reached, or of its nearest ancestor
/// that has it.
fn clicked(ev: &leptos::ev::MouseEvent, name: &str) -> Option<String> {
    ev.target()
        .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
        .and_then(|e| e.closest(&format!("[{name}]")).ok().flatten())
        .and_then(|b| b.get_attribute(name))
}

/// Text made safe to put in HTML: the pages below write their tables as markup, which keeps
/// the app small; everything that came from the server goes through here.
fn esc(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn state_words(state: CellState) -> &'static str {
    match state {
        CellState::Passed => "✓ passed",
        CellState::Tried => "◐ tried",
        CellState::NotTried => "○ not tried",
    }
}

/// The matrix's rows sorted by a column: `name`, `passed`, or a scenario id.
fn sorted_rows(students: &[StudentRow], by: &str, down: bool) -> Vec<StudentRow> {
    let rank = |row: &StudentRow| -> (u8, u32) {
        row.cells
            .iter()
            .find(|c| c.scenario == by)
            .map(|c| {
                let state = match c.state {
                    CellState::Passed => 2,
                    CellState::Tried => 1,
                    CellState::NotTried => 0,
                };
                (state, c.attempts)
            })
            .unwrap_or_default()
    };
    let order = |a: &StudentRow, b: &StudentRow| {
        let order = match by {
            "name" => a
                .display_name
                .to_ascii_lowercase()
                .cmp(&b.display_name.to_ascii_lowercase()),
            "passed" => a.passed.cmp(&b.passed),
            _ => rank(a).cmp(&rank(b)),
        };
        if down {
            order.reverse()
        } else {
            order
        }
    };
    // A stable insertion sort: a class is a few hundred rows at most, and it keeps the app
    // smaller than the standard library's sort would.
    let mut rows: Vec<StudentRow> = Vec::with_capacity(students.len());
    for row in students {
        let at = rows
            .iter()
            .position(|r| order(row, r) == std::cmp::Ordering::Less)
            .unwrap_or(rows.len());
        rows.insert(at, row.clone());
    }
    rows
}

/// The matrix as a table whose column headers are sort buttons (`data-sort`).
fn matrix_html(class: &str, matrix: &Matrix, by: &str, down: bool) -> String {
    let header = |key: &str, label: &str| {
        let sort = if key == by {
            if down {
                "descending"
            } else {
                "ascending"
            }
        } else {
            "none"
        };
        format!(
            "<th scope=\"col\" aria-sort=\"{sort}\"><button class=\"link-button sort\" data-sort=\"{}\">{}</button></th>",
            esc(key),
            esc(label)
        )
    };
    let mut out = String::from("<table class=\"data matrix\"><caption>Students by scenario: state and attempts; sort by any column</caption><thead><tr>");
    out.push_str(&header("name", "Student"));
    out.push_str(&header("passed", "Passed"));
    for s in &matrix.scenarios {
        out.push_str(&header(&s.scenario, &s.title));
    }
    out.push_str("</tr></thead><tbody>");
    for row in sorted_rows(&matrix.students, by, down) {
        let student = esc(&row.student);
        out.push_str(&format!(
            "<tr data-student=\"{student}\"><th scope=\"row\"><a href=\"/instructor/classes/{}/students/{student}\">{}</a></th><td>{}</td>",
            esc(class),
            esc(&row.display_name),
            row.passed
        ));
        for c in &row.cells {
            let state = c.state.as_str();
            let attempts = c.attempts;
            let mut words = state_words(c.state).to_string();
            if attempts > 0 {
                words.push_str(&format!(" · {attempts} attempt(s)"));
            }
            if let Some(n) = c.attempts_before_first_pass {
                words.push_str(&format!(", {n} before the first pass"));
            }
            if let Some(at) = &c.last_attempt_at {
                words.push_str(&format!(", last {}", when(at)));
            }
            if c.outdated_attempts > 0 {
                words.push_str(" · older version");
            }
            out.push_str(&format!(
                "<td class=\"cell {}\" data-scenario=\"{}\">{}</td>",
                esc(state),
                esc(&c.scenario),
                esc(&words)
            ));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// Progress per scenario, and the requirements missed most with who missed them.
fn progress_html(
    class: &str,
    matrix: &Matrix,
    missed: &[MissedScenario],
    may_regrade: bool,
) -> String {
    let mut out = format!(
        "<h2>Progress</h2><table class=\"data progress\"><caption>{} students</caption><thead><tr><th scope=\"col\">Scenario</th><th scope=\"col\">Passed</th><th scope=\"col\">Tried, not passed yet</th><th scope=\"col\">Not tried</th><th scope=\"col\">Results from an older version</th></tr></thead><tbody>",
        matrix.members
    );
    for s in &matrix.scenarios {
        // Results from an older version can be checked again against the current one.
        let regrade = if may_regrade && s.outdated_attempts > 0 {
            format!(
                " <button class=\"secondary small\" data-regrade=\"{}\">Regrade</button>",
                esc(&s.scenario)
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "<tr data-scenario=\"{}\"><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}{regrade}</td></tr>",
            esc(&s.scenario),
            esc(&s.title),
            s.passed,
            s.tried,
            s.not_tried,
            s.outdated_attempts
        ));
    }
    out.push_str("</tbody></table><h2>Requirements missed most</h2>");
    let mut any = false;
    for s in missed {
        if s.requirements.is_empty() {
            continue;
        }
        any = true;
        out.push_str(&format!("<h3>{}</h3><ul class=\"missed\">", esc(&s.title)));
        for r in &s.requirements {
            // In whole percent; an integer, so that no float formatting comes into the app.
            let share = (r.share * 100.0 + 0.5) as u64;
            let who = |still: bool| -> Vec<String> {
                r.missed_by
                    .iter()
                    .filter(|m| m.still_missing == still)
                    .map(|m| {
                        format!(
                            "<a href=\"/instructor/classes/{}/students/{}\">{}</a>",
                            esc(class),
                            esc(&m.student),
                            esc(&m.display_name)
                        )
                    })
                    .collect()
            };
            let (still, since) = (who(true), who(false));
            let since = if since.is_empty() {
                String::new()
            } else {
                format!("; met it since: {}", since.join(", "))
            };
            out.push_str(&format!(
                "<li data-requirement=\"{}\"><strong>{}</strong> — missed by {} ({share}% of those who tried); {} still missing{}{}{since}</li>",
                esc(&r.requirement),
                esc(&r.text),
                r.students,
                r.still_missing,
                if still.is_empty() { "" } else { ": " },
                still.join(", ")
            ));
        }
        out.push_str("</ul>");
    }
    if !any {
        out.push_str("<p>No requirement missed yet.</p>");
    }
    out
}

/// Follows a link of this app inside it (no reload), as `Link` does; false for anything else.
fn follow_link(ev: &leptos::ev::MouseEvent, nav: Navigator) -> bool {
    if ev.button() != 0 || ev.ctrl_key() || ev.meta_key() || ev.shift_key() {
        return false;
    }
    match clicked(ev, "href") {
        Some(href) if href.starts_with('/') && !href.starts_with("/api/") => {
            ev.prevent_default();
            nav.go(&href);
            true
        }
        _ => false,
    }
}

/// The class page's markup: the heading, the join page, the downloads, the preview setting,
/// progress, the requirements missed most, and the matrix sorted by `sort`.
fn class_html(id: &str, loaded: &ClassPageData, sort: &str, said: &Said) -> String {
    let ClassPageData {
        class,
        matrix,
        missed,
        staff,
        deadlines,
    } = loaded;
    // Only the owner (or an administrator) may change the setting.
    let locked = if may_own(class) { "" } else { " disabled" };
    let options: String = Preview::ALL
        .iter()
        .map(|value| {
            let words = match value {
                Preview::Everything => "every requirement",
                Preview::Lacks => "only what the design lacks",
                Preview::Nothing => "none",
            };
            let selected = if class.preview == *value {
                " selected"
            } else {
                ""
            };
            format!(
                "<option value=\"{}\"{selected}>{words}</option>",
                value.as_str()
            )
        })
        .collect();
    let (by, down) = match sort.strip_prefix('-') {
        Some(key) => (key, true),
        None => (sort, false),
    };
    format!(
        "<p class=\"crumbs\"><a href=\"/instructor\">← Classes</a></p><h1>{name}</h1>\
         <p>Join page: <span class=\"join-url\">{url}</span> · code <code>{code}</code> · {state}</p>\
         <p class=\"exports\">Download: <a href=\"/api/classes/{id}/matrix?format=csv\" download=\"matrix.csv\">the matrix (CSV)</a> · \
         <a href=\"/api/classes/{id}/attempts?format=csv\" download=\"attempts.csv\">every attempt (CSV)</a> · \
         <a href=\"/api/classes/{id}/gradebook?format=csv\" download=\"gradebook.csv\">the gradebook (CSV)</a></p>\
         <p><label for=\"preview-setting\">Live preview for students: </label><select id=\"preview-setting\"{locked}>{options}</select> \
         <span role=\"status\" class=\"muted\">{saved}</span></p>{due}{progress}<h2>Students</h2><div class=\"table-wrap\">{table}</div>{staff}",
        name = esc(&class.name),
        url = esc(&class.join_url),
        code = esc(&class.join_code),
        state = if class.open { "open" } else { "closed" },
        id = esc(id),
        saved = esc(&said.preview),
        due = deadlines_html(class, deadlines, &said.due),
        progress = progress_html(id, matrix, missed, class.role != Some(StaffRole::Viewer)),
        table = matrix_html(id, matrix, by, down),
        staff = staff_html(id, class, staff, &said.staff),
    )
}

/// What the class page shows, as the server answered it.
#[derive(Clone)]
struct ClassPageData {
    class: ClassBody,
    matrix: Matrix,
    missed: Vec<MissedScenario>,
    staff: Vec<StaffMember>,
    deadlines: Deadlines,
}

/// What the class page's forms last came to: the preview setting, the due dates, the staff.
#[derive(Clone, Default)]
struct Said {
    preview: String,
    due: String,
    staff: String,
}

/// An RFC 3339 time as a `datetime-local` field holds it: the browser's local time.
fn local_input(at: &str) -> String {
    let t = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(at));
    if t.get_time().is_nan() {
        return String::new();
    }
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        t.get_full_year(),
        t.get_month() + 1,
        t.get_date(),
        t.get_hours(),
        t.get_minutes()
    )
}

/// The class's due dates and late policy, and for its owner the form that sets the class's
/// due date and the policy (each scenario's own stay as they are).
fn deadlines_html(class: &ClassBody, d: &Deadlines, said: &str) -> String {
    let mut out = String::from("<h2>Due dates</h2><ul class=\"due-dates\">");
    out.push_str(&format!(
        "<li>Every scenario: {}</li>",
        d.due_at.as_deref().map_or("no due date".to_string(), when)
    ));
    for s in &d.scenarios {
        out.push_str(&format!(
            "<li>{}: {}{}</li>",
            esc(&s.scenario),
            when(&s.due_at),
            if s.source == "platform" {
                " (from the learning platform)"
            } else {
                ""
            }
        ));
    }
    out.push_str(&format!(
        "<li>After the due date: {}</li><li>Extensions: {}</li></ul>",
        match d.late_policy {
            LatePolicy::Accept => "attempts are recorded and marked late",
            LatePolicy::Refuse => "attempts are refused",
        },
        d.extensions.len()
    ));
    if may_own(class) {
        let selected = |p: LatePolicy| if d.late_policy == p { " selected" } else { "" };
        out.push_str(&format!(
            "<form class=\"due-form\" id=\"due-dates\"><label for=\"due-at\">Due date for every scenario (your local time; empty: none)</label> \
             <input id=\"due-at\" type=\"datetime-local\" value=\"{}\"> <label for=\"late-policy\">After it</label> \
             <select id=\"late-policy\"><option value=\"accept\"{}>record and mark late</option><option value=\"refuse\"{}>refuse</option></select> \
             <button class=\"secondary\" type=\"submit\">Save the due dates</button> <span role=\"status\" class=\"muted\">{}</span></form>",
            esc(&d.due_at.as_deref().map(local_input).unwrap_or_default()),
            selected(LatePolicy::Accept),
            selected(LatePolicy::Refuse),
            esc(said)
        ));
    }
    out
}

/// `/instructor/classes/{id}`: the matrix, sortable; progress per scenario; the requirements
/// missed most, each with the students who missed it; the CSV exports; the preview setting.
/// The page is one piece of markup; its links, sort buttons and setting are handled where
/// they bubble up to.
#[component]
pub fn ClassPage(id: String) -> impl IntoView {
    let nav = expect_context::<Navigator>();
    let key = id.clone();
    let loaded = load_once(async move {
        let class = grader::get_answer(&format!("/api/classes/{key}")).await?;
        let matrix = grader::get_answer(&format!("/api/classes/{key}/matrix")).await?;
        let missed = grader::get_answer(&format!("/api/classes/{key}/missed")).await?;
        let staff = grader::get_answer(&format!("/api/classes/{key}/staff")).await?;
        let deadlines = grader::get_answer(&format!("/api/classes/{key}/deadlines")).await?;
        Ok::<_, api::ApiError>(ClassPageData {
            class,
            matrix,
            missed,
            staff,
            deadlines,
        })
    });
    // The column sorted by (`-` before it: going down), and what the forms' saves said.
    let sort = RwSignal::new("name".to_string());
    let said = RwSignal::new(Said::default());
    let cid = id.clone();
    let html = move || {
        match loaded.get() {
        None => "<p class=\"muted\" role=\"status\">Loading the class…</p>".to_string(),
        Some(Err(e)) => format!(
            "<p class=\"error\" role=\"alert\">The class could not be loaded: {}</p><p><a href=\"/instructor\">Sign in</a></p>",
            esc(&e.message)
        ),
        Some(Ok(data)) => class_html(&cid, &data, &sort.get(), &said.get()),
    }
    };
    let rid = id.clone();
    let on_click = move |ev: leptos::ev::MouseEvent| {
        if follow_link(&ev, nav) {
            return;
        }
        if let Some(scenario) = clicked(&ev, "data-regrade") {
            leptos::task::spawn_local(regrade(rid.clone(), scenario, said));
            return;
        }
        if let Some(key) = clicked(&ev, "data-sort") {
            // The same column again goes the other way.
            sort.update(|by| {
                *by = if *by == key {
                    format!("-{key}")
                } else {
                    key.clone()
                }
            });
            // The table is drawn anew: the focus goes back to the same header's button.
            request_animation_frame(move || {
                super::dom::focus(&format!("button[data-sort=\"{}\"]", esc(&key)));
            });
        }
    };
    let pid = id.clone();
    let on_change = move |ev: leptos::ev::Event| {
        // Only the preview setting saves on a change; the staff form's fields wait for its
        // button.
        let setting = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .is_some_and(|e| e.id() == "preview-setting");
        if !setting {
            return;
        }
        let value = event_target_value(&ev);
        leptos::task::spawn_local(save_preview(pid.clone(), value, loaded, said));
    };
    let sid = id.clone();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let form = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .map(|f| f.id())
            .unwrap_or_default();
        if form == "due-dates" {
            let typed = input_value("#due-at");
            let policy = LatePolicy::parse(&select_value("#late-policy")).unwrap_or_default();
            leptos::task::spawn_local(save_due(sid.clone(), typed, policy, loaded, said));
            return;
        }
        let account = take_input("#staff-account").trim().to_string();
        let role = select_value("#staff-role");
        let Some(role) = StaffRole::parse(&role) else {
            return;
        };
        leptos::task::spawn_local(give_role(sid.clone(), account, role, loaded, said));
    };
    view! {
        <section class="page wide instructor" on:click=on_click on:change=on_change on:submit=on_submit inner_html=html></section>
    }
}

/// The class page's data as loaded, which a change redraws.
type Loaded = RwSignal<Option<Result<ClassPageData, api::ApiError>>, LocalStorage>;

/// Checks the class's attempts at `scenario` again against its current version, and says
/// what came of it in `saved`.
async fn regrade(class: String, scenario: String, said: RwSignal<Said>) {
    let request = RegradeRequest {
        scenario: scenario.clone(),
        class: Some(class),
    };
    let done = grader::send::<RegradeReport>("POST", "/api/regrade", Some(&request)).await;
    let words = match done {
        Ok(r) => format!(
            "{scenario}: {} attempt(s) checked again against the current version, {} changed between passed and missed. Reload to see them.",
            r.regraded_now, r.passed_changed
        ),
        Err(e) => e.message,
    };
    said.update(|s| s.preview = words);
}

/// Saves the class's preview setting; the page is drawn again with the class as the server
/// now has it.
async fn save_preview(class: String, value: String, loaded: Loaded, said: RwSignal<Said>) {
    let update = ClassUpdate {
        preview: Preview::named(&value),
        ..ClassUpdate::default()
    };
    let url = format!("/api/classes/{class}");
    let done = grader::send::<ClassBody>("PATCH", &url, Some(&update)).await;
    if let Ok(class) = &done {
        loaded.update(|l| {
            if let Some(Ok(data)) = l {
                data.class = class.clone();
            }
        });
    }
    let words = match done {
        Ok(_) => format!("Saved ({value}): students see it when they next open the app."),
        Err(e) => e.message,
    };
    said.update(|s| s.preview = words);
    request_animation_frame(|| {
        super::dom::focus("#preview-setting");
    });
}

/// Saves the class's due date (`typed`, the browser's local time; empty: none) and late
/// policy, keeping each scenario's own due date as staff set it.
async fn save_due(
    class: String,
    typed: String,
    late_policy: LatePolicy,
    loaded: Loaded,
    said: RwSignal<Said>,
) {
    let due = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&typed));
    let due_at =
        (!typed.is_empty() && !due.get_time().is_nan()).then(|| String::from(due.to_iso_string()));
    let scenarios = loaded.with_untracked(|l| match l {
        Some(Ok(data)) => data
            .deadlines
            .scenarios
            .iter()
            .filter(|s| s.source == "staff")
            .map(|s| (s.scenario.clone(), s.due_at.clone()))
            .collect(),
        _ => Default::default(),
    });
    let update = DeadlinesUpdate {
        due_at,
        late_policy,
        scenarios,
    };
    let url = format!("/api/classes/{class}/deadlines");
    let done = grader::send::<Deadlines>("PUT", &url, Some(&update)).await;
    let words = match done {
        Ok(d) => {
            let words = match &d.due_at {
                Some(at) => format!("Saved: due {}.", when(at)),
                None => "Saved: no due date for the whole class.".to_string(),
            };
            loaded.update(|l| {
                if let Some(Ok(data)) = l {
                    data.deadlines = d;
                }
            });
            words
        }
        Err(e) => e.message,
    };
    said.update(|s| s.due = words);
    request_animation_frame(|| {
        super::dom::focus("#due-at");
    });
}

/// Gives `account` the role `role` in the class; the staff table is drawn again.
async fn give_role(
    class: String,
    account: String,
    role: StaffRole,
    loaded: Loaded,
    said: RwSignal<Said>,
) {
    let url = format!("/api/classes/{class}/staff/{}", encode(&account));
    let done = grader::send::<StaffMember>("PUT", &url, Some(&StaffGrant { role })).await;
    let staff: Result<Vec<StaffMember>, _> =
        grader::get_answer(&format!("/api/classes/{class}/staff")).await;
    if let Ok(staff) = staff {
        loaded.update(|l| {
            if let Some(Ok(data)) = l {
                data.staff = staff;
            }
        });
    }
    let words = match done {
        Ok(m) => format!("{} is now {}.", m.account, role_words(Some(m.role))),
        Err(e) => e.message,
    };
    said.update(|s| s.staff = words);
    request_animation_frame(|| {
        super::dom::focus("#staff-account");
    });
}

/// A student's attempts for the class, as markup.
fn attempts_html(
    class: &str,
    body: &StudentAttempts,
    titles: &std::collections::BTreeMap<String, String>,
) -> String {
    let attempts = &body.attempts;
    let mut out = format!(
        "<h1>{}</h1><p class=\"muted\">{} attempt(s), oldest first</p><ol class=\"attempts\">",
        esc(&body.display_name),
        attempts.len()
    );
    for a in attempts {
        // The requirements by their words, as the verdict gave them.
        let text_of = |id: &str| -> String {
            a.verdict["requirements"]
                .as_array()
                .and_then(|rs| rs.iter().find(|r| r["id"] == id))
                .and_then(|r| r["text"].as_str())
                .unwrap_or(id)
                .to_string()
        };
        let verdict = if a.passed {
            " · ✓ passed".to_string()
        } else {
            let missed: Vec<String> = a.missed.iter().map(|m| text_of(m)).collect();
            format!(" · ✗ missed: {}", missed.join("; "))
        };
        out.push_str(&format!(
                "<li class=\"attempt\" data-attempt=\"{}\" data-scenario=\"{}\"><p><strong>{}</strong> · {} · {} of {}{}</p>",
                esc(&a.id),
                esc(&a.scenario),
                esc(titles.get(&a.scenario).unwrap_or(&a.scenario)),
                esc(&when(&a.created_at)),
                a.score,
                a.max_score,
                esc(&verdict)
            ));
        if a.late {
            out.push_str(
                "<p class=\"late\">Late: made after the student's due date; its score does not count.</p>",
            );
        }
        if a.outdated {
            out.push_str(
                "<p class=\"muted\">This verdict is from an older version of the scenario.</p>",
            );
        }
        for g in a.regrades.iter().filter(|g| g.current) {
            out.push_str(&format!(
                "<p class=\"muted\">Regraded against the current version: {} of {}{}.</p>",
                g.score,
                g.max_score,
                if g.passed { ", passed" } else { "" }
            ));
        }
        out.push_str(&format!(
                "<p><a href=\"/instructor/classes/{}/attempts/{}\">Open the design and its replay</a></p></li>",
                esc(class),
                esc(&a.id)
            ));
    }
    out.push_str("</ol>");
    out
}

/// `/instructor/classes/{id}/students/{student}`: a student's attempts with their verdicts.
#[component]
pub fn StudentPage(class: String, student: String) -> impl IntoView {
    let nav = expect_context::<Navigator>();
    let url = format!("/api/classes/{class}/students/{student}/attempts");
    let loaded = load_once(async move {
        let attempts = grader::get_answer::<StudentAttempts>(&url).await?;
        // The scenarios' titles, which the page names them by.
        let titles: std::collections::BTreeMap<String, String> = api::catalogue()
            .await
            .map(|list| list.into_iter().map(|s| (s.id, s.title)).collect())
            .unwrap_or_default();
        Ok::<_, api::ApiError>((attempts, titles))
    });
    // What the extension form's last submission came to.
    let said = RwSignal::new(String::new());
    let cid = class.clone();
    let html = move || {
        let crumbs = format!(
            "<p class=\"crumbs\"><a href=\"/instructor/classes/{}\">← The class</a></p>",
            esc(&cid)
        );
        crumbs
            + &match loaded.get() {
                None => "<p class=\"muted\" role=\"status\">Loading the attempts…</p>".to_string(),
                Some(Err(e)) => {
                    format!("<p class=\"error\" role=\"alert\">{}</p>", esc(&e.message))
                }
                Some(Ok((body, titles))) => {
                    attempts_html(&cid, &body, &titles) + &extension_html(&said.get())
                }
            }
    };
    let (rc, rs) = (class.clone(), student.clone());
    let on_click = move |ev: leptos::ev::MouseEvent| {
        if follow_link(&ev, nav) || clicked(&ev, "data-remove").is_none() {
            return;
        }
        let url = format!("/api/classes/{rc}/students/{rs}");
        let back = format!("/instructor/classes/{rc}");
        leptos::task::spawn_local(async move {
            match grader::send_empty("DELETE", &url).await {
                Ok(()) => nav.go(&back),
                Err(e) => said.set(e.message),
            }
        });
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let renaming = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .is_some_and(|f| f.id() == "rename");
        let member = format!("/api/classes/{class}/students/{student}");
        if renaming {
            let name = take_input("#member-name").trim().to_string();
            leptos::task::spawn_local(rename(member, name, said));
            return;
        }
        let typed = input_value("#extension-due");
        let scenario = take_input("#extension-scenario").trim().to_string();
        // The field holds the instructor's local time: the browser turns it into UTC.
        let due = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&typed));
        if due.get_time().is_nan() {
            said.set("Give the new due date and time.".to_string());
            return;
        }
        let request = ExtensionRequest {
            scenario: (!scenario.is_empty()).then_some(scenario),
            due_at: String::from(due.to_iso_string()),
        };
        leptos::task::spawn_local(give_extension(member, request, said));
    };
    view! {
        <section class="page instructor" on:click=on_click on:submit=on_submit inner_html=html></section>
    }
}

/// Renames the member at `member` (their route) to `name`, and says what came of it.
async fn rename(member: String, name: String, said: RwSignal<String>) {
    let update = MemberUpdate {
        display_name: name.clone(),
    };
    said.set(
        match grader::send_no_content("PATCH", &member, Some(&update)).await {
            Ok(()) => format!("Renamed {name}: reload to see the new name everywhere."),
            Err(e) => e.message,
        },
    );
}

/// Gives the member at `member` (their route) the extension `request`, and says what came
/// of it.
async fn give_extension(member: String, request: ExtensionRequest, said: RwSignal<String>) {
    let url = format!("{member}/extension");
    let done = grader::send::<Extension>("PUT", &url, Some(&request)).await;
    said.set(match done {
        Ok(e) => format!(
            "{} may submit {} until {}.",
            e.display_name,
            e.scenario.as_deref().unwrap_or("every scenario"),
            when(&e.due_at)
        ),
        Err(e) => e.message,
    });
    request_animation_frame(|| {
        super::dom::focus("#extension-due");
    });
}

/// Whose attempt it is and when, whether it was late, and whether the verdict shown (the one
/// given then) was regraded since.
fn attempt_note(body: &shared::wire::classes::ClassAttemptBody) -> String {
    let row = &body.row;
    let mut note = format!(
        "{}'s attempt of {} · read-only.",
        body.display_name,
        when(&row.created_at)
    );
    if row.late {
        note.push_str(" Late: made after the student's due date.");
    }
    if let Some(g) = row.regrades.iter().find(|g| g.current) {
        note.push_str(&format!(
            " The verdict below is the one given then; regraded against the current version of the scenario: {} of {}{}.",
            g.score,
            g.max_score,
            if g.passed { ", passed" } else { "" }
        ));
    } else if row.outdated {
        note.push_str(
            " The verdict below is from an older version of the scenario, not regraded yet.",
        );
    }
    note
}

/// The form that gives the student a later due date (a TA's or the owner's), and the ones
/// that rename the member or remove them from the class.
fn extension_html(said: &str) -> String {
    format!(
        "<h2>Member</h2><form class=\"rename\" id=\"rename\"><label for=\"member-name\">Name in the class</label> \
         <input id=\"member-name\" type=\"text\" maxlength=\"60\" required autocomplete=\"off\"> \
         <button class=\"secondary\" type=\"submit\">Rename</button> \
         <button class=\"danger\" type=\"button\" data-remove=\"1\">Remove from the class</button></form>\
         <h2>Extension</h2><form class=\"extension\" id=\"extension\">\
         <label for=\"extension-due\">New due date (your local time)</label> <input id=\"extension-due\" type=\"datetime-local\" required> \
         <label for=\"extension-scenario\">Scenario (empty: every one)</label> <input id=\"extension-scenario\" type=\"text\" maxlength=\"64\" autocomplete=\"off\"> \
         <button class=\"primary\" type=\"submit\">Give the extension</button> <span role=\"status\" class=\"muted\">{}</span></form>",
        esc(said)
    )
}

/// `/instructor/classes/{id}/attempts/{attempt}`: the attempt's design read-only on the canvas,
/// with its verdict and the replay of each missed requirement.
#[component]
pub fn AttemptPage(class: String, attempt: String) -> impl IntoView {
    // (The attempt's student, what the page says of it, the scenario, the design, the verdict.)
    let (c, a) = (class.clone(), attempt.clone());
    let loaded = load_once(async move {
        let (body, verdict) = grader::class_attempt(&c, &a).await.map_err(|e| e.message)?;
        let scenario = api::scenario(&body.row.scenario)
            .await
            .map_err(|e| e.message)?;
        let design = shared::design::design_from_json(&body.design)
            .map_err(|_| "the stored design cannot be read".to_string())?;
        let note = attempt_note(&body);
        Ok::<_, String>((body.student, note, Arc::new(scenario), design, verdict))
    });
    view! {
        {move || match loaded.get() {
            None => view! { <section class="page"><p class="muted" role="status">"Loading the attempt…"</p></section> }.into_any(),
            Some(Err(e)) => view! { <section class="page"><p class="error" role="alert">{format!("The attempt could not be opened: {e}")}</p></section> }.into_any(),
            Some(Ok((student, note, scenario, design, verdict))) => {
                let page = Page::viewer(scenario.clone(), design, verdict);
                provide_context(page);
                let back = format!("/instructor/classes/{class}/students/{student}");
                view! {
                    <div class="workspace viewer">
                        <aside class="brief" aria-label="The attempt">
                            <p class="crumbs"><Link href=back>"← The student's attempts"</Link></p>
                            <h1>{scenario.scenario().title.clone()}</h1>
                            <p class="attempt-note">{note}</p>
                        </aside>
                        <section class="stage" aria-label="The design">
                            <CanvasView />
                            <div class="panel"><ResultsPanel /></div>
                        </section>
                        <aside class="side" aria-label="Replay" class:sheet-open=move || page.replay.with(Option::is_some) class:replaying=move || page.replay.with(Option::is_some)>
                            {move || page.replay.with(Option::is_some).then(|| view! { <ReplayPanel /> })}
                        </aside>
                    </div>
                }.into_any()
            }
        }}
    }
}
