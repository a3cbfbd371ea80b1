#!/usr/bin/env node
// pi 1.6's own compaction choices on session files, for test_compaction_interop.py's pi 1.6 tests.
// Usage: node pi16_compaction_oracle.mjs JOBS.json  -> one JSON line per job ({ok, ...} or {ok:false, error}).
//   {op:"prepare", file, leaf, keeps:[...]}
//       prepareCompaction(getBranch(leaf), settings) per keepRecentTokens: the first kept entry, split turn,
//       tokensBefore, the messages to summarize and of the turn prefix (whole), previous summary, file lists
//   {op:"branch", file, oldLeaf, target, budget}
//       collectEntriesForBranchSummary + prepareBranchEntries: the messages a branch summary covers, its file lists
//   {op:"append", file, out, leaf, summary, firstKeptEntryId, tokensBefore, details, usage}
//       copy file to out, move to leaf, appendCompaction as pi 1.6's compact() does (fromHook false):
//       the written entry and buildSessionContext after it
// pi lives in $PI_NODE_MODULES (the run_node16 fixture sets it), package $PI_PACKAGE.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const DIST = path.join(process.env.PI_NODE_MODULES, ...(process.env.PI_PACKAGE || "@earendil-works/pi-coding-agent").split("/"), "dist");
const load = (rel) => import(pathToFileURL(path.join(DIST, rel)).href);
const SM = await load("core/session-manager.js");
const COMP = await load("core/compaction/compaction.js");
const UTILS = await load("core/compaction/utils.js");
const BRANCH = await load("core/compaction/branch-summarization.js");

function openCopy(file) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi16-compaction-"));
	const dst = path.join(dir, path.basename(file));
	fs.copyFileSync(file, dst);
	return { sm: SM.SessionManager.open(dst, dir), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

function prepare(job) {
	const { sm, cleanup } = openCopy(job.file);
	try {
		const pathEntries = sm.getBranch(job.leaf);
		return job.keeps.map((keep) => {
			const prep = COMP.prepareCompaction(pathEntries, { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
			if (!prep) return { keep, prepared: false };
			return {
				keep,
				prepared: true,
				firstKeptEntryId: prep.firstKeptEntryId,
				isSplitTurn: prep.isSplitTurn,
				tokensBefore: prep.tokensBefore,
				messagesToSummarize: prep.messagesToSummarize,
				turnPrefixMessages: prep.turnPrefixMessages,
				previousSummary: prep.previousSummary ?? null,
				fileLists: UTILS.computeFileLists(prep.fileOps),
			};
		});
	} finally {
		cleanup();
	}
}

function branch(job) {
	const { sm, cleanup } = openCopy(job.file);
	try {
		const { entries } = BRANCH.collectEntriesForBranchSummary(sm, job.oldLeaf, job.target);
		const prep = BRANCH.prepareBranchEntries(entries, job.budget ?? 0);
		return { entryIds: entries.map((e) => e.id), messages: prep.messages, fileLists: UTILS.computeFileLists(prep.fileOps) };
	} finally {
		cleanup();
	}
}

function append(job) {
	fs.copyFileSync(job.file, job.out);
	const sm = SM.SessionManager.open(job.out, path.dirname(job.out));
	sm.branch(job.leaf);
	const id = sm.appendCompaction(job.summary, job.firstKeptEntryId, job.tokensBefore, job.details, false, job.usage);
	const entry = sm.getEntries().find((e) => e.id === id);
	return { entry, messages: sm.buildSessionContext().messages };
}

const jobs = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
for (const job of jobs) {
	try {
		const result = job.op === "prepare" ? { results: prepare(job) } : job.op === "branch" ? branch(job) : append(job);
		process.stdout.write(`${JSON.stringify({ ok: true, ...result })}\n`);
	} catch (error) {
		process.stdout.write(`${JSON.stringify({ ok: false, error: String(error?.stack ?? error) })}\n`);
	}
}
