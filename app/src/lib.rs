#![recursion_limit = "256"]
//! Reckon's console: the types that cross the wire, the server functions,
//! and the pages. Compiled twice — with `ssr` into the server, with
//! `hydrate` into WebAssembly for the browser.

pub mod ageing;
pub mod api;
pub mod bank;
pub mod bulk;
pub mod codes;
pub mod console;
pub mod error;
pub mod filter;
pub mod format;
pub mod i18n;
pub mod mfa;
pub mod outbox;
pub mod pages;
pub mod policy;
pub mod readable;
pub mod refused;
pub mod sessions;
pub mod settings;
pub mod sinks;
#[cfg(feature = "ssr")]
pub mod ssr;
pub mod tickets;
pub mod tokens;
pub mod types;

pub use pages::{App, shell};

/// Query parameter carrying a server function's error back to a page after a
/// plain (no-JavaScript) form post.
pub const ERROR_PARAM: &str = "err";
/// Beside [`ERROR_PARAM`]: the server's seal on it, without which a page
/// shows no error from its address.
pub const ERROR_SEAL: &str = "errseal";

/// Sets the HTTP status of the page being rendered on the server; nothing in
/// the browser.
pub fn ssr_status(code: u16) {
    #[cfg(feature = "ssr")]
    if let Some(opts) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = axum::http::StatusCode::from_u16(code)
    {
        opts.set_status(status);
    }
    #[cfg(not(feature = "ssr"))]
    let _ = code;
}

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
