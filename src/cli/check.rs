//! `critic-gate check`: apply release budgets to a replay's output folder;
//! exit 0 when every budget passes, 1 when any fails, 2 when it cannot
//! judge (missing or unreadable folder, unknown variant, no budget given).

use std::path::PathBuf;
use std::process::ExitCode;

use critic_gate::budgets::{Amount, Limit, BUDGETS};
use critic_gate::CheckConfig;

use super::CliResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The output folder of a `replay`.
    pub dir: PathBuf,
    /// Config whose `[check]` table gives budgets (flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub budgets: Budgets,
    /// The variant(s) to check (default: every non-baseline variant).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Also write the verdict as Markdown to FILE (e.g. $GITHUB_STEP_SUMMARY).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// One flag per declared budget (`critic_gate::budgets::BUDGETS`), its
/// help and value from the declaration.
#[derive(Debug, Default)]
pub struct Budgets(pub CheckConfig);

impl clap::FromArgMatches for Budgets {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut b = Budgets::default();
        b.update_from_arg_matches(m)?;
        Ok(b)
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for d in &BUDGETS {
            let a = match d.limit {
                Limit::Count => m.get_one::<u64>(d.key).copied().map(Amount::Count),
                Limit::Rate => m.get_one::<f64>(d.key).copied().map(Amount::Rate),
            };
            if let Some(a) = a {
                self.0.limits.insert(d.budget, a);
            }
        }
        Ok(())
    }
}

impl clap::Args for Budgets {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        for d in &BUDGETS {
            let arg = clap::Arg::new(d.key).long(d.long).help(d.help);
            cmd = cmd.arg(match d.limit {
                Limit::Count => arg.value_name("N").value_parser(clap::value_parser!(u64)),
                Limit::Rate => arg.value_name("R").value_parser(clap::value_parser!(f64)),
            });
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

pub fn run(a: Args) -> CliResult {
    let request = critic_gate::jobs::check::Request {
        dir: a.dir,
        config: a.config,
        budgets: CheckConfig {
            variant: Some(a.variants).filter(|v| !v.is_empty()),
            ..a.budgets.0
        },
        markdown: a.markdown,
    };
    let verdict = critic_gate::jobs::check::run(&request)?;
    super::output::stdout(&verdict.text)?;
    Ok(if verdict.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
