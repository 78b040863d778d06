//! The console's pages and the frame around them. Every page renders on the
//! server (so it reads and its forms post without JavaScript) and hydrates.

mod ageing;
mod alerts;
mod approvals;
mod audit;
mod bank;
mod bulk;
mod callbacks;
pub mod cells;
mod closes;
mod confirm;
mod dashboard;
pub mod empty;
mod held;
mod login;
mod mfa;
mod outbox;
mod payments;
mod policy;
mod raw;
mod refused;
mod runs;
mod sessions;
mod settings;
mod sinks;
mod ticket;
mod tickets;
mod tokens;
mod users;

use crate::api::{Login, Logout, SetLanguage, waiting_for_me, whoami};
use crate::console::ApprovalQueue;
use crate::error::AppError;
use crate::filter::QueryFilter;
use crate::i18n::{Msg, error_text, role_name, tr};
use crate::ssr_status;
use crate::types::{Lang, Role, SessionInfo, User};
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos_meta::{Html, MetaTags, Title, provide_meta_context};
use leptos_router::components::{A, Redirect, Route, Router, Routes};
use leptos_router::hooks::use_query_map;
use leptos_router::{SsrMode, path};

pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    content_security_policy();
    let css = format!("/{}/reckon.css", options.site_pkg_dir);
    view! {
        <!DOCTYPE html>
        <html>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <link rel="stylesheet" id="leptos" href=css/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// A page runs only its own scripts: those of this origin and the inline
/// ones that carry this answer's nonce (the hydration and the resources
/// rendered with the page); it may not be framed, nor post elsewhere.
#[cfg(feature = "ssr")]
fn content_security_policy() {
    use axum::http::{HeaderValue, header};
    let (Some(nonce), Some(res)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    );
    if let Ok(v) = HeaderValue::from_str(&policy) {
        res.insert_header(header::CONTENT_SECURITY_POLICY, v);
    }
}

/// Shared by every page: who is looking, and the actions that change it.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub info: Resource<Result<SessionInfo, AppError>>,
    pub set_lang: ServerAction<SetLanguage>,
    pub login: ServerAction<Login>,
    pub logout: ServerAction<Logout>,
}

/// A page's data as the server answered it. A page creates its resources in
/// its route component, outside `Frame`: the server renders what is inside
/// `Frame` more than once, and a resource made there would be fetched each
/// time, the page drawn from the last answer and hydrated with the first.
pub type Loaded<T> = Resource<Result<T, AppError>>;

/// The signed-in viewer, provided to a page's body by [`Frame`].
#[derive(Clone)]
pub struct Viewer {
    pub user: User,
    pub lang: Lang,
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let set_lang = ServerAction::<SetLanguage>::new();
    let login = ServerAction::<Login>::new();
    let logout = ServerAction::<Logout>::new();
    // Whoever signs in or out, or switches language, the page asks again.
    let info = Resource::new(
        move || {
            (
                set_lang.version().get(),
                login.version().get(),
                logout.version().get(),
            )
        },
        |_| whoami(),
    );
    provide_context(Ctx {
        info,
        set_lang,
        login,
        logout,
    });
    // Marks the page once the WebAssembly has taken over (tests wait for it).
    Effect::new(move |_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });

    view! {
        <Title text="Reckon"/>
        <Router>
            <Routes fallback=|| view! { <NotFound/> }>
                <Route path=path!("/login") view=login::LoginPage ssr=SsrMode::Async/>
                <Route path=path!("/") view=dashboard::DashboardPage ssr=SsrMode::Async/>
                <Route path=path!("/callbacks") view=callbacks::CallbacksPage ssr=SsrMode::Async/>
                <Route path=path!("/callbacks/:id") view=callbacks::CallbackPage ssr=SsrMode::Async/>
                <Route path=path!("/payments") view=payments::PaymentsPage ssr=SsrMode::Async/>
                <Route path=path!("/payments/:no") view=payments::PaymentPage ssr=SsrMode::Async/>
                <Route path=path!("/runs") view=runs::RunsPage ssr=SsrMode::Async/>
                <Route path=path!("/alerts") view=alerts::AlertsPage ssr=SsrMode::Async/>
                <Route path=path!("/users") view=users::UsersPage ssr=SsrMode::Async/>
                <Route path=path!("/tickets") view=tickets::TicketsPage ssr=SsrMode::Async/>
                <Route path=path!("/tickets/:id") view=ticket::TicketPage ssr=SsrMode::Async/>
                <Route path=path!("/approvals") view=approvals::ApprovalsPage ssr=SsrMode::Async/>
                <Route path=path!("/approvals/bulk/:id") view=bulk::BulkProposalPage ssr=SsrMode::Async/>
                <Route path=path!("/audit") view=audit::AuditPage ssr=SsrMode::Async/>
                <Route path=path!("/bank") view=bank::BankPage ssr=SsrMode::Async/>
                <Route path=path!("/outbox") view=outbox::OutboxPage ssr=SsrMode::Async/>
                <Route path=path!("/outbox/:id") view=outbox::OutboxMessagePage ssr=SsrMode::Async/>
                <Route path=path!("/sinks") view=sinks::SinksPage ssr=SsrMode::Async/>
                <Route path=path!("/refused") view=refused::RefusedListPage ssr=SsrMode::Async/>
                <Route path=path!("/refused/:id") view=refused::RefusedOnePage ssr=SsrMode::Async/>
                <Route path=path!("/tokens") view=tokens::TokensPage ssr=SsrMode::Async/>
                <Route path=path!("/policy") view=policy::PolicyPageView ssr=SsrMode::Async/>
                <Route path=path!("/settings") view=settings::SettingsPage ssr=SsrMode::Async/>
                <Route path=path!("/sessions") view=sessions::SessionsPage ssr=SsrMode::Async/>
                <Route path=path!("/security") view=mfa::SecurityPage ssr=SsrMode::Async/>
                <Route path=path!("/login/code") view=mfa::SecondStepPage ssr=SsrMode::Async/>
                <Route path=path!("/login/enrol") view=mfa::EnrolStepPage ssr=SsrMode::Async/>
            </Routes>
        </Router>
    }
}

/// The frame of every signed-in page: navigation, language switch, sign out.
/// Sends anonymous visitors to the login page and shows a 403 page to roles
/// not in `allow` (the server functions refuse them anyway).
#[component]
pub fn Frame(allow: &'static [Role], children: ChildrenFn) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let children = StoredValue::new(children);
    provide_context(Badge::new());
    view! {
        <Transition fallback=|| view! { <p class="loading">"…"</p> }>
            {move || Suspend::new(async move {
                match ctx.info.await {
                    Err(err) => EitherOf3::A(view! { <ErrorNote err=Some(err) lang=Lang::En/> }),
                    Ok(SessionInfo { user: None, .. }) => EitherOf3::B(view! { <Redirect path="/login"/> }),
                    Ok(SessionInfo { user: Some(user), lang, .. }) => {
                        let allowed = allow.contains(&user.role);
                        if !allowed {
                            ssr_status(403);
                        }
                        provide_context(Viewer { user: user.clone(), lang });
                        EitherOf3::C(view! {
                            <Html attr:lang=lang.html_tag()/>
                            <SkipLink lang=lang/>
                            <Nav user=user lang=lang/>
                            <main id="main" tabindex="-1">
                                {if allowed {
                                    Either::Left(children.with_value(|c| c()))
                                } else {
                                    Either::Right(view! { <Forbidden lang=lang/> })
                                }}
                            </main>
                        })
                    }
                }
            })}
        </Transition>
    }
}

/// The first stop of the Tab key on every signed-in page: straight past the
/// top bar to the page's own content. Shown only while focused. The page
/// moves the focus itself: the router would take `#main` for a navigation.
#[component]
fn SkipLink(lang: Lang) -> impl IntoView {
    view! {
        <a href="#main" class="skip-link" id="skip-link"
            on:click=move |ev| {
                if let Some(main) = document().get_element_by_id("main") {
                    ev.prevent_default();
                    #[cfg(feature = "hydrate")]
                    {
                        use wasm_bindgen::JsCast;
                        if let Ok(main) = main.dyn_into::<leptos::web_sys::HtmlElement>() {
                            let _ = main.focus();
                        }
                    }
                    #[cfg(not(feature = "hydrate"))]
                    let _ = main;
                }
            }>
            {Msg::SkipToContent.text(lang)}
        </a>
    }
}

/// The top bar: the day's work as links, the rest in three groups that
/// open in place (`<details>`, no script needed), so the bar is one line
/// on a laptop; on a phone the whole navigation folds behind a menu button
/// (a checkbox and its label, also without script).
#[component]
fn Nav(user: User, lang: Lang) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let is_admin = user.role == Role::Admin;
    let sees_audit = matches!(user.role, Role::Supervisor | Role::Admin);
    let decides = sees_audit;
    view! {
        <header class="topbar">
            <span class="brand">{Msg::AppName.text(lang)}</span>
            <input type="checkbox" id="menu-toggle" class="menu-toggle" aria-label=tr(lang, "Menu", "菜单")/>
            <label for="menu-toggle" class="menu-button" id="menu-button">
                "☰ " {tr(lang, "Menu", "菜单")}
            </label>
            <nav aria-label=tr(lang, "Main", "主导航") id="main-nav">
                <A href="/" exact=true attr:id="nav-dashboard">{Msg::Dashboard.text(lang)}</A>
                <A href="/tickets" attr:id="nav-tickets">{Msg::Discrepancies.text(lang)}</A>
                <A href="/approvals" attr:id="nav-approvals">
                    {Msg::Approvals.text(lang)}
                    {(user.role == Role::Supervisor).then(|| view! { <QueueBadge lang=lang/> })}
                </A>
                <A href="/alerts" attr:id="nav-alerts">{Msg::Alerts.text(lang)}</A>
                <details class="group" id="nav-group-money">
                    <summary>{tr(lang, "Money", "资金")}</summary>
                    <div class="menu">
                        <A href="/payments" attr:id="nav-payments">{Msg::Payments.text(lang)}</A>
                        <A href="/callbacks" attr:id="nav-callbacks">{Msg::Callbacks.text(lang)}</A>
                        <A href="/refused" attr:id="nav-refused">{Msg::RefusedWebhooks.text(lang)}</A>
                        <A href="/outbox" attr:id="nav-outbox">{Msg::Outbox.text(lang)}</A>
                    </div>
                </details>
                <details class="group" id="nav-group-reconcile">
                    <summary>{tr(lang, "Reconcile", "对账")}</summary>
                    <div class="menu">
                        <A href="/runs" attr:id="nav-runs">{tr(lang, "Runs", "对账批次")}</A>
                        <A href="/bank" attr:id="nav-bank">{Msg::Bank.text(lang)}</A>
                    </div>
                </details>
                <details class="group" id="nav-group-admin">
                    <summary>{tr(lang, "Admin", "管理")}</summary>
                    <div class="menu">
                        <A href="/sinks" attr:id="nav-sinks">{Msg::Sinks.text(lang)}</A>
                        {sees_audit.then(|| view! { <A href="/audit" attr:id="nav-audit">{tr(lang, "Audit", "审计")}</A> })}
                        {sees_audit.then(|| view! { <A href="/policy" attr:id="nav-policy">{tr(lang, "Approval policy", "审批策略")}</A> })}
                        {is_admin.then(|| view! { <A href="/users" attr:id="nav-users">{Msg::NavUsers.text(lang)}</A> })}
                        {is_admin.then(|| view! { <A href="/tokens" attr:id="nav-tokens">{Msg::NavTokens.text(lang)}</A> })}
                        {decides.then(|| view! { <A href="/settings" attr:id="nav-settings">{Msg::NavSettings.text(lang)}</A> })}
                    </div>
                </details>
            </nav>
            <div class="account">
                <span class="who" id="who">
                    <span class="signed-in-as">{Msg::SignedInAs.text(lang)} " "</span>
                    // One's own name opens one's sessions.
                    <A href="/sessions" attr:id="nav-sessions"
                        attr:title=tr(lang, "Your sessions", "您的登录会话")>
                        <strong>{user.username.clone()}</strong>
                    </A>
                    " (" {role_name(user.role, lang)} ")"
                </span>
                <LangSwitch action=ctx.set_lang lang=lang/>
                <ActionForm action=ctx.logout attr:class="inline">
                    <button type="submit" id="sign-out">{Msg::SignOut.text(lang)}</button>
                </ActionForm>
            </div>
        </header>
    }
}

/// The top bar's count of proposals waiting, made the first time the bar
/// is drawn for a supervisor and kept by `Frame`: the bar is drawn inside
/// `Frame`'s suspense, which the server renders more than once (see
/// `Loaded`), and it is only for supervisors, so it cannot be made before.
#[derive(Clone, Copy)]
struct Badge {
    owner: StoredValue<Owner>,
    queue: StoredValue<Option<Loaded<ApprovalQueue>>>,
}

impl Badge {
    fn new() -> Badge {
        Badge {
            owner: StoredValue::new(Owner::current().expect("an owner")),
            queue: StoredValue::new(None),
        }
    }

    fn queue(self) -> Loaded<ApprovalQueue> {
        if let Some(made) = self.queue.get_value() {
            return made;
        }
        let made = self
            .owner
            .with_value(|o| o.with(|| Resource::new(|| (), |_| waiting_for_me())));
        self.queue.set_value(Some(made));
        made
    }
}

/// How many proposals of others wait for this supervisor's decision.
#[component]
fn QueueBadge(lang: Lang) -> impl IntoView {
    let queue = expect_context::<Badge>().queue();
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                queue.await.ok().map(|q| {
                    let title = format!("{}: {}", Msg::WaitingForYou.text(lang), q.waiting);
                    let class = if q.waiting > 0 { "badge" } else { "badge zero" };
                    view! {
                        " " <span id="queue-badge" class=class
                            title=title.clone() aria-label=title>{q.waiting}</span>
                    }
                })
            })}
        </Transition>
    }
}

#[component]
pub fn LangSwitch(action: ServerAction<SetLanguage>, lang: Lang) -> impl IntoView {
    view! {
        <ActionForm action=action attr:class="inline">
            <input type="hidden" name="lang" value=lang.other().as_str()/>
            <button type="submit" id="lang-switch" class="link">
                {Msg::SwitchLanguage.text(lang)}
            </button>
        </ActionForm>
    }
}

/// An error from an action (after hydration) or from `?err=` (after a plain
/// form post), in the viewer's language.
#[component]
pub fn ErrorNote(err: Option<AppError>, lang: Lang) -> impl IntoView {
    err.map(|e| {
        view! { <p class="error" role="alert">{error_text(&e, lang)}</p> }
    })
}

/// A loaded part of a page, or what went wrong in its place: an error left
/// as a plain `Err` renders nothing, a blank page with no word why.
pub fn shown<V: IntoView + 'static>(loaded: Result<V, AppError>, lang: Lang) -> AnyView {
    match loaded {
        Ok(v) => v.into_any(),
        Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
    }
}

/// A list's filter, as the address carries it.
pub fn query_filter<F: QueryFilter + 'static>() -> impl Fn() -> F + Copy {
    let query = use_query_map();
    move || {
        let q = query.read();
        let pairs: Vec<(&str, String)> = F::KEYS
            .iter()
            .filter_map(|k| q.get(k).map(|v| (*k, v)))
            .collect();
        F::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
    }
}

/// The error a plain form post left in the address (`?err=`), shown only
/// under this server's seal: a link carrying someone else's words shows
/// nothing. The server opens the seal; the page hydrates with its verdict,
/// and an address reached in the browser shows no error from it.
pub fn url_error() -> impl Fn() -> Option<AppError> + Copy {
    let query = use_query_map();
    let raw = move || query.with(|q| q.get(crate::ERROR_PARAM));
    let opened = SharedValue::new(move || {
        #[cfg(feature = "ssr")]
        {
            query.with_untracked(|q| {
                let (json, seal) = (q.get(crate::ERROR_PARAM)?, q.get(crate::ERROR_SEAL)?);
                crate::ssr::opened_error(&json, &seal).map(|e| (json, e))
            })
        }
        #[cfg(not(feature = "ssr"))]
        None::<(String, AppError)>
    })
    .into_inner();
    let opened = StoredValue::new(opened);
    move || {
        let raw = raw()?;
        opened.with_value(|o| {
            o.as_ref()
                .filter(|(json, _)| *json == raw)
                .map(|(_, e)| e.clone())
        })
    }
}

/// The newest error of an action, else the one in the address.
pub fn action_error<A, T>(
    action: ServerAction<A>,
    from_url: impl Fn() -> Option<AppError> + Copy,
) -> impl Fn() -> Option<AppError> + Copy
where
    A: leptos::server_fn::ServerFn<Output = T, Error = AppError> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    move || match action.value().get() {
        Some(Err(e)) => Some(e),
        Some(Ok(_)) => None,
        None => from_url(),
    }
}

#[component]
fn Forbidden(lang: Lang) -> impl IntoView {
    view! {
        <section class="notice" id="forbidden">
            <h1>{Msg::ForbiddenTitle.text(lang)}</h1>
            <p>{Msg::ForbiddenBody.text(lang)}</p>
            <p><A href="/">{Msg::BackHome.text(lang)}</A></p>
        </section>
    }
}

/// The page for an address no route matches. Rendered outside any matched
/// route, so it uses no router components (links are plain anchors).
#[component]
fn NotFound() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    ssr_status(404);
    view! {
        <Transition fallback=|| view! { <p class="loading">"…"</p> }>
            {move || Suspend::new(async move {
                let lang = ctx.info.await.map(|i| i.lang).unwrap_or_default();
                view! {
                    <Html attr:lang=lang.html_tag()/>
                    <main>
                        <section class="notice" id="not-found">
                            <h1>{Msg::NotFoundTitle.text(lang)}</h1>
                            <p>{Msg::NotFoundBody.text(lang)}</p>
                            <p><a href="/">{Msg::BackHome.text(lang)}</a></p>
                        </section>
                    </main>
                }
            })}
        </Transition>
    }
}
