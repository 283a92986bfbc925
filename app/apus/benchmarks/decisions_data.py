"""The agent's own word, as data: 60 decisions and preferences an agent writes down (to
MEMORY.md, USER.md or the day's note, with an importance), and for each the question a user
asks weeks later, in their own words rather than the entry's.

Written for a vault of command-line documentation (the tldr pages): most entries name tools
those pages describe, so documents that share a question's words compete with the entry that
answers it. `apus eval --decisions` reads them (`apus.benchmarks.decisions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Target = Literal["daily", "MEMORY.md", "USER.md"]


@dataclass(frozen=True)
class Decision:
    target: Target
    importance: int
    days_ago: int  # when the agent wrote it, counted back from the benchmark's today
    text: str  # the entry, as the agent wrote it
    question: str  # what the user asks later


DECISIONS: tuple[Decision, ...] = (
    Decision(
        "MEMORY.md",
        8,
        260,
        "Decided: the team vault syncs with Obsidian Sync, not iCloud (iCloud corrupted two "
        "notes in March).",
        "which service keeps the shared notes in sync between our machines?",
    ),
    Decision(
        "MEMORY.md",
        8,
        250,
        "Decided: nightly backups of the home server go to the NAS with restic; rsync is "
        "only for one-off copies.",
        "what do we use to back up the home server every night?",
    ),
    Decision(
        "MEMORY.md",
        7,
        240,
        "Decided: the blog is deployed by pushing to main; GitHub Actions builds it with "
        "Hugo and uploads the site to Netlify.",
        "how does a new post go live on the website?",
    ),
    Decision(
        "MEMORY.md",
        9,
        235,
        "Decided: production Postgres is upgraded only in the Sunday 02:00-04:00 "
        "maintenance window.",
        "when are we allowed to upgrade the production database?",
    ),
    Decision(
        "MEMORY.md",
        7,
        230,
        "Decided: Python projects use uv for environments and lock files; poetry is retired.",
        "which tool manages virtualenvs and dependency pinning in our Python repos?",
    ),
    Decision(
        "MEMORY.md",
        7,
        220,
        "Decided: container images are built with podman in CI, because the runners have no "
        "Docker daemon.",
        "what builds our container images in the pipeline?",
    ),
    Decision(
        "MEMORY.md",
        9,
        215,
        "Decided: SSH to the servers is by ed25519 keys only; password login is disabled in "
        "sshd_config.",
        "can I log into the servers with a password?",
    ),
    Decision(
        "MEMORY.md",
        8,
        210,
        "Decided: the link between the office and the cloud runs on WireGuard; OpenVPN was "
        "removed in May.",
        "what connects the office network to the cloud?",
    ),
    Decision(
        "MEMORY.md",
        6,
        205,
        "Decided: logs are kept for 30 days in Loki and then deleted; nothing older is archived.",
        "how long do we keep application logs around?",
    ),
    Decision(
        "MEMORY.md",
        7,
        200,
        "Decided: the staging cluster is recreated from Terraform every Monday morning, so "
        "nothing on it is permanent.",
        "is it safe to store files on staging for a few weeks?",
    ),
    Decision(
        "MEMORY.md",
        7,
        195,
        "Decided: TLS certificates come from Let's Encrypt through Caddy's automatic HTTPS; "
        "the certbot cron jobs are gone.",
        "how are the HTTPS certificates renewed?",
    ),
    Decision(
        "MEMORY.md",
        6,
        190,
        "Decided: releases are tagged with calendar versions such as 2026.11.1, not semantic "
        "versions.",
        "what numbering scheme do our releases follow?",
    ),
    Decision(
        "MEMORY.md",
        7,
        185,
        "Decided: merge requests need one approval and a green pipeline; squash merge is the "
        "default.",
        "what does a pull request need before it can land?",
    ),
    Decision(
        "MEMORY.md",
        7,
        180,
        "Decided: the monorepo uses pnpm workspaces; npm and yarn lock files are rejected by "
        "the pre-commit hook.",
        "which JavaScript package manager should I run in the monorepo?",
    ),
    Decision(
        "MEMORY.md",
        9,
        175,
        "Decided: secrets live in 1Password and are injected with `op run`; no .env file is "
        "ever committed.",
        "where do I get API keys for local development?",
    ),
    Decision(
        "MEMORY.md",
        6,
        170,
        "Decided: the shared drive is mounted over NFS v4 on every Linux host; SMB is only "
        "for the Windows laptops.",
        "how do the Linux machines get at the shared drive?",
    ),
    Decision(
        "MEMORY.md",
        7,
        165,
        "Decided: cron jobs on the servers were replaced by systemd timers, so failures show "
        "up in journalctl.",
        "how are scheduled jobs run on the servers now?",
    ),
    Decision(
        "MEMORY.md",
        6,
        160,
        "Decided: course videos are exported as 1080p H.264 MP4 at 8 Mbit/s; the raw "
        "recordings stay on the NAS.",
        "what format do we publish the lesson recordings in?",
    ),
    Decision(
        "MEMORY.md",
        6,
        155,
        "Decided: DNS on the home network is Pi-hole on the Raspberry Pi, with Quad9 as upstream.",
        "what resolves domain names at home?",
    ),
    Decision(
        "MEMORY.md",
        7,
        150,
        "Decided: Kubernetes manifests are Helm charts in the deploy/ folder; kustomize was "
        "dropped.",
        "how do we template the cluster configuration?",
    ),
    Decision(
        "MEMORY.md",
        8,
        145,
        "Decided: every work laptop uses full-disk encryption (LUKS on Linux, FileVault on macOS).",
        "do our laptops need their drives encrypted?",
    ),
    Decision(
        "MEMORY.md",
        8,
        140,
        "Decided: database dumps are taken with pg_dump in custom format every six hours and "
        "kept for a week.",
        "how often is the database snapshotted?",
    ),
    Decision(
        "MEMORY.md",
        7,
        135,
        "Decided: the API rate limit is 100 requests per minute per token; bursts above it "
        "get HTTP 429.",
        "how many calls can a client make before it is throttled?",
    ),
    Decision(
        "MEMORY.md",
        6,
        130,
        "Decided: Python code is formatted with ruff format and checked with ruff; black and "
        "flake8 were removed.",
        "which linter and formatter do we run on the Python code?",
    ),
    Decision(
        "MEMORY.md",
        6,
        125,
        "Decided: commit messages follow Conventional Commits (feat:, fix:, chore:) so the "
        "changelog is generated.",
        "how should I word my commit titles?",
    ),
    Decision(
        "MEMORY.md",
        6,
        120,
        "Decided: the default branch is main; master was renamed in every repository in February.",
        "what is the primary branch called in our repositories?",
    ),
    Decision(
        "MEMORY.md",
        8,
        115,
        "Decided: monitoring alerts go to the #ops-alerts Slack channel and page the on-call "
        "person only for severity 1.",
        "who gets woken up when something breaks at night?",
    ),
    Decision(
        "MEMORY.md",
        5,
        110,
        "Decided: images on the website are served as WebP, converted at build time with cwebp.",
        "which picture format does the site use?",
    ),
    Decision(
        "MEMORY.md",
        5,
        105,
        "Decided: the kids' Minecraft server runs in a container on the old NUC and a timer "
        "stops it at 21:00.",
        "when does the children's game server shut down in the evening?",
    ),
    Decision(
        "MEMORY.md",
        9,
        100,
        "Decided: the customer database is hosted in Frankfurt (eu-central-1) for GDPR reasons.",
        "in which region is customer data stored?",
    ),
    Decision(
        "MEMORY.md",
        6,
        95,
        "Decided: end-to-end tests run with Playwright against a preview deployment of each "
        "branch.",
        "what do we use for browser testing?",
    ),
    Decision(
        "MEMORY.md",
        8,
        90,
        "Decided: the firewall on every server is nftables with a default-drop input policy; "
        "ufw is not used.",
        "how is incoming traffic filtered on the hosts?",
    ),
    Decision(
        "MEMORY.md",
        6,
        85,
        "Decided: large binary assets of the game repository are stored with Git LFS, at "
        "most 2 GB a file.",
        "where do the big texture files of the game live?",
    ),
    Decision(
        "MEMORY.md",
        5,
        80,
        "Decided: the weekly report is generated from the issue tracker by a Python script "
        "every Friday at 16:00.",
        "when does the status summary get produced?",
    ),
    Decision(
        "MEMORY.md",
        8,
        75,
        "Decided: the router's admin interface is reachable only from the management VLAN 10.",
        "from which network can I open the router settings page?",
    ),
    Decision(
        "MEMORY.md",
        5,
        70,
        "Decided: the photo library is deduplicated and kept on the NAS in year/month folders.",
        "how is the family picture collection organised?",
    ),
    Decision(
        "MEMORY.md",
        7,
        65,
        "Decided: the analytics pipeline moves from cron and bash scripts to Airflow DAGs by "
        "the end of the quarter.",
        "what will orchestrate the data jobs after this quarter?",
    ),
    Decision(
        "MEMORY.md",
        6,
        60,
        "Decided: every server keeps its time with chrony against the office NTP server.",
        "what keeps the clocks of the machines correct?",
    ),
    Decision(
        "MEMORY.md",
        8,
        55,
        "Decided: Redis is only a cache: nothing in it may be the only copy of data, and it "
        "runs without persistence.",
        "can I store user sessions permanently in the key-value store?",
    ),
    Decision(
        "MEMORY.md",
        5,
        50,
        "Decided: the Raspberry Pi in the garage logs the temperature to InfluxDB every "
        "minute; Grafana shows the dashboard.",
        "where can I see how cold the garage gets?",
    ),
    Decision(
        "USER.md",
        7,
        300,
        "Sam prefers answers in British English, with dates written as 2 March 2026.",
        "how should I format a day and month when replying to Sam?",
    ),
    Decision(
        "USER.md",
        7,
        290,
        "Sam uses Neovim with the LazyVim setup; never suggest VS Code extensions.",
        "what editor does the user work in?",
    ),
    Decision(
        "USER.md",
        6,
        280,
        "Sam wants shell examples for fish, not bash.",
        "which shell syntax should examples use?",
    ),
    Decision(
        "USER.md",
        9,
        270,
        "Sam is vegetarian and allergic to peanuts.",
        "are there foods I should avoid when suggesting recipes?",
    ),
    Decision(
        "USER.md",
        6,
        245,
        "Sam works 09:00 to 17:00 Berlin time, with no meetings on Wednesdays.",
        "which day of the week should I keep free of calls?",
    ),
    Decision(
        "USER.md",
        7,
        225,
        "Sam prefers short answers: the command first, the explanation after.",
        "how does the user like responses to be structured?",
    ),
    Decision(
        "USER.md",
        5,
        190,
        "Sam's laptop is a ThinkPad X1 Carbon running Fedora 41.",
        "what operating system is on the user's computer?",
    ),
    Decision(
        "USER.md",
        5,
        150,
        "Sam reads German and English; documentation links in German are welcome.",
        "which languages can the user read?",
    ),
    Decision(
        "USER.md",
        6,
        120,
        "Sam wants pull requests kept small: under 300 changed lines.",
        "how big should a change be when I open a review for Sam?",
    ),
    Decision(
        "USER.md",
        6,
        90,
        "Sam's partner is Alex; their anniversary is on 14 June.",
        "when is the wedding anniversary?",
    ),
    Decision(
        "USER.md",
        5,
        60,
        "Sam prefers metric units and the 24-hour clock.",
        "should I give temperatures in Fahrenheit?",
    ),
    Decision(
        "USER.md",
        5,
        30,
        "Sam dislikes emoji in commit messages and in chat replies.",
        "is it fine to add smileys to the messages I write?",
    ),
    Decision(
        "daily",
        8,
        320,
        "Decided with Sam: the kitchen renovation starts on 12 January; the electrician comes "
        "first.",
        "when does the work on the kitchen begin?",
    ),
    Decision(
        "daily",
        6,
        200,
        "Sam chose the Hetzner CX32 plan for the new Nextcloud instance.",
        "which hosting plan did we pick for the file-sharing server?",
    ),
    Decision(
        "daily",
        6,
        150,
        "The print server moved from CUPS on the old iMac to the Raspberry Pi; the printer is "
        "now at ipp://pi.local.",
        "what address should I add for the printer?",
    ),
    Decision(
        "daily",
        7,
        110,
        "Decided: the team offsite is in Lisbon, 3-5 May; book flights before March.",
        "where are we meeting in person this spring?",
    ),
    Decision(
        "daily",
        6,
        70,
        "Sam decided to cancel the Dropbox subscription at the end of the month; files move "
        "to Nextcloud.",
        "are we keeping the old cloud storage plan?",
    ),
    Decision(
        "daily",
        5,
        45,
        "The GPU box got an RTX 4070; CUDA 12.4 is installed with driver 550.",
        "which graphics card is in the machine-learning computer?",
    ),
    Decision(
        "daily",
        8,
        20,
        "Decided: the old Jenkins server is switched off on 30 November, after the pipelines "
        "move to GitLab CI.",
        "when is the legacy build server being shut down?",
    ),
    Decision(
        "daily",
        7,
        8,
        "Sam's passport expires in August 2027; renew it before booking the summer trip.",
        "until when is the travel document valid?",
    ),
)
