//! The launch: the platform's `id_token`, once verified, signs the person in on the scenario,
//! in the course's class, with the staff role their platform roles ask for.

use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;

use super::browser::{self, Browser};
use super::claims::{verify_launch, Launch, LaunchForm};
use super::codes::random;
use super::deep_linking::deep_linking_page;
use super::grades;
use super::outbound::Outbound;
use super::page::{internal, see_other, Refusal};
use crate::auth;
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::routes::{classes, joining};
use crate::store::Store;

pub async fn launch(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    State(catalogue): State<Arc<Catalogue>>,
    State(outbound): State<Arc<Outbound>>,
    headers: HeaderMap,
    Form(form): Form<LaunchForm>,
) -> Result<Response, Refusal> {
    let launch = verify_launch(&store, &outbound, &form, &headers).await?;
    // Every check passed: now the login is spent (once), and the student signed in.
    let state = form.state.as_deref().unwrap_or_default();
    if !store.use_lti_login(state).await.map_err(internal)? {
        return Err(Refusal::forbidden(
            "this login was used already: a launch is accepted once",
        ));
    }
    let student = launched_student(&store, &launch).await?;
    // The platform's course is a class: made at its first launch; a learner is a member.
    let class = match &launch.context {
        Some((id, title)) => Some(course_class(&store, &launch, id, title).await?),
        None => None,
    };
    if let Some(class) = &class {
        enter_class(&store, &launch, &student, class).await?;
    }
    // Only the browser that started the login is signed in: any other keeps its session.
    let secret = match launch.browser {
        Browser::Started => {
            let secret = auth::new_session_secret().map_err(internal)?;
            store
                .add_session(&student, &auth::hash_token(&secret))
                .await
                .map_err(internal)?;
            Some(secret)
        }
        Browser::Other => None,
    };
    if let Some(deep) = &launch.deep_linking {
        let mut response = deep_linking_page(&store, &catalogue, deep).await?;
        if let Some(secret) = &secret {
            for cookie in [
                auth::session_cookie(&headers, &config, secret),
                browser::expire_login_cookie(state),
            ] {
                response.headers_mut().append(
                    header::SET_COOKIE,
                    HeaderValue::from_str(&cookie).map_err(internal)?,
                );
            }
        }
        return Ok(response);
    }
    record_grade_target(&store, &outbound, &catalogue, &launch, &student).await?;
    if let Some(class) = &class {
        platform_due_date(&store, &outbound, &catalogue, &launch, class).await;
    }
    let target = match (&launch.scenario, &class) {
        (_, Some(class)) if launch.instructor => format!("/instructor/classes/{class}"),
        (Some(id), _) if !launch.instructor && catalogue.get(id).is_some() => {
            format!("/scenarios/{id}")
        }
        _ => "/".to_string(),
    };
    tracing::info!(student = %student, platform = %launch.platform, instructor = launch.instructor, signed_in = secret.is_some(), "LTI launch");
    let code = random().map_err(internal)?;
    store
        .add_lti_handoff(&auth::hash_token(&code), &student, &target)
        .await
        .map_err(internal)?;
    match secret {
        // A frame that keeps no cookie of this site can still hand the student over to a new
        // window: the launched page gets a one-time code in its URL's fragment (never sent to
        // a server by the browser), which the resume page exchanges for a session.
        Some(secret) => see_other(
            &format!("{target}#lti-handoff={code}"),
            &[
                browser::launch_cookie(&headers, &config, &secret),
                browser::expire_login_cookie(state),
            ],
        ),
        // A browser that did not start the login is signed in by nobody but itself: the
        // resume page names whom the launch was for and asks first.
        None => see_other(&format!("/lti/resume?code={code}"), &[]),
    }
}

/// Staff of the course get their role in its class (and their session signs them in as their
/// account); anyone else becomes a member, under the platform's name for them.
async fn enter_class(
    store: &Store,
    launch: &Launch,
    student: &str,
    class: &str,
) -> Result<(), Refusal> {
    if let Some(wanted) = launch.staff {
        let (account, role) = store
            .launched_staff(student, class, wanted)
            .await
            .map_err(internal)?;
        tracing::info!(class = %class, account = %account, role = role.as_str(), "a launch with a staff role");
    }
    if !launch.instructor {
        let shown = launch.name.as_deref().unwrap_or("Learner");
        let shown = joining::free_name(store, class, shown, student)
            .await
            .map_err(|e| internal(e.message))?;
        if let crate::store::Joined::Closed = store
            .join_class(class, student, &shown)
            .await
            .map_err(internal)?
        {
            tracing::info!(class = %class, student = %student, "a launch into a closed class: not made a member");
        }
    }
    Ok(())
}

/// The student a launch's user is: found by their issuer and `sub`, or made now, with the
/// platform's name for them as display name.
async fn launched_student(store: &Store, launch: &Launch) -> Result<String, Refusal> {
    let student = match store
        .lti_student(&launch.issuer, &launch.sub)
        .await
        .map_err(internal)?
    {
        Some(student) => student,
        None => {
            let id = auth::new_student_id();
            store.add_lti_student(&id).await.map_err(internal)?;
            store
                .link_lti_user(&launch.issuer, &launch.sub, &id)
                .await
                .map_err(internal)?
        }
    };
    if let Some(name) = &launch.name {
        store
            .set_display_name(&student, Some(name))
            .await
            .map_err(internal)?;
    }
    Ok(student)
}

/// The due date the launch's line item gives its scenario in the course's class
/// (`endDateTime`), when the platform lets the tool read it; a due date staff set wins. A
/// failure to read it is logged and the launch goes on.
async fn platform_due_date(
    store: &Store,
    outbound: &Outbound,
    catalogue: &Catalogue,
    launch: &Launch,
    class: &str,
) {
    let (Some(lineitem), true) = (&launch.lineitem, launch.lineitem_readable) else {
        return;
    };
    let Some(entry) = launch.scenario.as_deref().and_then(|id| catalogue.get(id)) else {
        return;
    };
    let platforms = match store.lti_platforms().await {
        Ok(p) => p,
        Err(e) => return tracing::warn!("the platforms could not be read: {e}"),
    };
    let Some(platform) = platforms.iter().find(|p| p.id == launch.platform) else {
        return;
    };
    match grades::line_item_end(store, outbound, platform, lineitem).await {
        Ok(Some(end)) => match store
            .set_platform_due(class, &entry.scenario().id, end)
            .await
        {
            Ok(true) => {
                tracing::info!(class, scenario = %entry.scenario().id, due = %end, "a due date from the platform's line item")
            }
            Ok(false) => {}
            Err(e) => tracing::warn!("the line item's due date could not be kept: {e}"),
        },
        Ok(None) => {}
        Err(e) => tracing::warn!(platform = %platform.id, "the line item could not be read: {e}"),
    }
}

/// The scores of the scenario a resource link opens go to its line item: the launch's, or
/// the one made for the resource link (once) when the launch named none. A platform that
/// cannot make one now does not stop the launch; the next launch tries again.
async fn record_grade_target(
    store: &Store,
    outbound: &Outbound,
    catalogue: &Catalogue,
    launch: &Launch,
    student: &str,
) -> Result<(), Refusal> {
    let Some(entry) = launch.scenario.as_deref().and_then(|id| catalogue.get(id)) else {
        return Ok(());
    };
    let lineitem = match (&launch.lineitem, &launch.lineitems, &launch.resource_link) {
        (Some(l), _, _) => Some(l.clone()),
        (None, Some(container), Some(link)) => {
            let platforms = store.lti_platforms().await.map_err(internal)?;
            match platforms.iter().find(|p| p.id == launch.platform) {
                Some(p) => {
                    match grades::line_item_for(
                        store,
                        outbound,
                        p,
                        container,
                        link,
                        entry.scenario(),
                    )
                    .await
                    {
                        Ok(l) => Some(l),
                        Err(e) => {
                            tracing::warn!(platform = %launch.platform, "no line item for the resource link yet: {e}");
                            None
                        }
                    }
                }
                None => None,
            }
        }
        _ => None,
    };
    if let (Some(lineitem), false) = (lineitem, launch.instructor) {
        store
            .set_grade_target(
                student,
                &entry.scenario().id,
                &launch.platform,
                &launch.sub,
                &lineitem,
            )
            .await
            .map_err(internal)?;
    }
    Ok(())
}

/// The class of a platform's course, made (with the course's title) at its first launch
/// through any of the issuer's registrations.
async fn course_class(
    store: &Store,
    launch: &Launch,
    context: &str,
    title: &str,
) -> Result<String, Refusal> {
    let (issuer, deployment) = (&launch.issuer, &launch.deployment);
    if let Some(class) = store
        .lti_course_class(issuer, deployment, context)
        .await
        .map_err(internal)?
    {
        return Ok(class);
    }
    let name: String = title
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect();
    let name = if name.trim().is_empty() {
        format!("Course {context}")
    } else {
        name.trim().to_string()
    };
    for _ in 0..8 {
        let code = classes::new_join_code().map_err(internal)?;
        let id = classes::new_class_id();
        if store
            .create_class(&id, &name, &code, &format!("lti:{}", launch.platform))
            .await
            .map_err(internal)?
            .is_some()
        {
            tracing::info!(class = %id, platform = %launch.platform, context, "a class made for a platform's course");
            return store
                .link_lti_course(issuer, deployment, context, &id)
                .await
                .map_err(internal);
        }
    }
    Err(internal("no free join code after 8 draws"))
}
