use std::path::{Path, PathBuf};

// `sqlx::migrate!` embeds `migrations/` at compile time: a new or changed
// migration must rebuild the crate.
//
// The console's compiled site (`web::assets`) is embedded from the folder
// named here in RECKON_EMBEDDED_SITE: `RECKON_EMBED_SITE` when set; else, in
// a release build, the build's own `target/site` (`.ci/lib.sh` writes it
// first); else an empty folder, so a clean clone, clippy and the debug test
// binaries build without a site and without carrying one.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-env-changed=RECKON_EMBED_SITE");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let site = match std::env::var_os("RECKON_EMBED_SITE") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if release => built_site(&out),
        None => None,
    };
    let folder = match site {
        Some(site) if site.join("pkg").is_dir() => {
            // A new or rebuilt file in the site rebuilds the binary.
            println!("cargo:rerun-if-changed={}", site.display());
            site
        }
        other => {
            if let Some(site) = other {
                println!(
                    "cargo:warning=no console site at {} (no pkg/): this binary embeds none",
                    site.display()
                );
            } else if release {
                println!(
                    "cargo:warning=no console site built (target/site): this binary embeds none; .ci/start builds it first"
                );
            }
            let empty = out.join("no-site");
            std::fs::create_dir_all(&empty).expect("an empty site folder");
            empty
        }
    };
    let folder = folder.canonicalize().unwrap_or(folder);
    println!("cargo:rustc-env=RECKON_EMBEDDED_SITE={}", folder.display());
}

/// `<target>/site` from `OUT_DIR` (`<target>/[<triple>/]<profile>/build/<pkg>/out`).
fn built_site(out: &Path) -> Option<PathBuf> {
    for up in [4, 5] {
        let target = out.ancestors().nth(up)?;
        let site = target.join("site");
        println!("cargo:rerun-if-changed={}", site.display());
        if site.is_dir() {
            return Some(site);
        }
    }
    None
}
