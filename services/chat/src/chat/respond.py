"""The answer to a question the evidence grounds: the generate and qualify nodes.

The recommendations search found are selected for the patient described (chat.selection), a
premise the question states is checked against NG12's text (chat.premise), and NG12's own
definitions and notes lead where the question needs them. Without an LLM the answer is extractive
(chat.answer); with Gemini configured, chat.llm writes it from the same selected recommendations.
No answer goes out without a citation.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from chat import answer as compose
from chat import claim_check, claim_model
from chat.clinical import ClinicalState, asks_about_age
from chat.definitions import (
    asked_definitions,
    asked_terms,
    asks_timeframe,
    claimed_definition,
    claims_definition,
    defined_terms,
)
from chat.group_words import restricted_group
from chat.knowledge import rec_from_pb
from chat.premise import (
    Claim,
    check,
    claimed_text,
    claims,
    definition_contradicted,
    describe,
    for_patient,
    named_tests,
    universal_contradicted,
)
from chat.premise_action import group_contradicted, probe_ages, route_contradicted
from chat.query import quote_term
from chat.results import results_lead
from chat.selection import Selection, select
from chat.state import ChatDeps, ChatState, redacted_text
from ng12_common.citations import hits_to_citations
from ng12_common.criteria import evaluate_all, parse_criteria, referenced_concepts
from ng12_common.models import Citation, Grounding
from ng12_common.retrieval_client import RetrievalError

#: A follow-up that adds to what the patient has ("also", "as well", "too", "in addition").
_ADDS = re.compile(r"\b(also|as well|too|in addition|additionally|on top)\b", re.IGNORECASE)


def _names_criteria_concept(sel: Selection, turn: ClinicalState) -> bool:
    """A symptom the question names is a criterion of a presented recommendation."""
    wanted = set(turn.symptoms)
    for rec, _score in sel.recs:
        if wanted and rec.criteria is not None:
            named = {
                c for concepts in referenced_concepts(parse_criteria(rec.criteria)).values() for c in concepts
            }
            if wanted & named:
                return True
    return False


def _concepts(criteria: Any) -> set[str]:
    """The concepts a recommendation's criteria refer to."""
    return {c for concepts in referenced_concepts(parse_criteria(criteria)).values() for c in concepts}


async def guideline_passage(
    deps: ChatDeps,
    version: str,
    query: str,
    section_suffix: str = "",
    contains: str = "",
    sections: tuple[str, ...] = (),
) -> Citation | None:
    """A passage of NG12 found by a fixed query (cached per index version in deps.glossary)."""
    key = (version, query, sections)
    if key not in deps.glossary:
        try:
            found = await deps.retrieval.search(
                query, top_k=5, mode="chat", doc_types=["guideline_text"], sections=sections
            )
        except RetrievalError:
            return None
        hit = next(
            (
                h
                for h in found.hits
                if h.section.lower().endswith(section_suffix.lower()) and contains.lower() in h.text.lower()
            ),
            None,
        )
        deps.glossary[key] = hits_to_citations([hit])[0] if hit is not None else None
    return deps.glossary[key]


async def definition_of(deps: ChatDeps, version: str, term: str) -> Citation | None:
    """NG12's definition of `term` (its glossary entry), if it has one."""
    return await guideline_passage(deps, version, term, section_suffix=f"> {term}")


async def context(state: ChatState, deps: ChatDeps, sel: Selection, text: str) -> tuple[str, list[Citation]]:
    """What the answer needs from NG12's terms and notes, beyond the recommendations: the
    definition of the timeframe a timing question asks about ("how fast?": Immediate), and for
    a patient under 25 the age groups of the recommendations presented (children, young
    people) with, for a young person, NG12's note that either pathway may be used."""
    version = state["guideline"].index_version if "guideline" in state else ""
    recs = [r for r, _ in sel.recs]
    passages: list[Citation] = []
    sentence: str | None = None
    if recs and asks_timeframe(text) and state.get("definition") is None:
        named = asked_terms(text)
        terms = named or [
            compose.ACTION_TERMS[r.action] for r in recs[:2] if r.action in compose.ACTION_TERMS
        ]
        for term in dict.fromkeys(terms):
            found = await definition_of(deps, version, term)
            if found is not None:
                passages.append(found)
    age = _patient_age(state)
    if age is not None and age < 25 and recs:
        sentence = compose.age_group_lead(age, recs)
        if sentence is not None:
            groups = {r.population.get("age_group") for r in recs}
            terms = ["Children"] if age < 16 or "children" in groups else []
            terms += ["Young people"] if 16 <= age < 25 else []
            terms += ["Children and young people"] if "children_and_young_people" in groups else []
            for term in terms:
                found = await definition_of(deps, version, term)
                if found is not None:
                    passages.append(found)
            # the adults' recommendation may be a near miss on age (18 and over), not presented
            shown = [*recs, *(m.rec for m in sel.near_misses)]
            both = {r.population.get("age_group") for r in shown}
            if 16 <= age < 25 and "adults" in both and "children_and_young_people" in both:
                section = next(r.section for r in shown if r.population.get("age_group") == "adults")
                note = await guideline_passage(
                    deps,
                    version,
                    "young people may be referred using either pathway",
                    contains="either pathway",
                    sections=(section,),
                )
                if note is not None:
                    passages.append(note)
    return compose.context_lead(sentence, passages), passages


def _same_patient(state: ChatState) -> bool:
    """A follow-up, or a message that describes no patient of its own ("PSA back at 2.9"):
    the session's patient."""
    turn = state["turn_state"]
    return state["query"].strategy != "direct" or (turn.age is None and not turn.names_clinical_terms)


def _patient_tests(state: ChatState) -> dict[str, float]:
    """The patient's test results: this message's, over the session's when it is the same patient."""
    turn = state["turn_state"]
    if _same_patient(state):
        return {**state["meta"].state.tests, **turn.tests}
    return dict(turn.tests)


def _patient_age(state: ChatState) -> int | None:
    """The patient's age: this message's, else the session's when it is the same patient."""
    turn = state["turn_state"]
    if turn.age is None and _same_patient(state):
        return state["meta"].state.age
    return turn.age


def _selection(state: ChatState) -> Selection:
    """The recommendations the answer presents, chosen from search's hits for the patient described."""
    candidates: dict[str, tuple[Any, float]] = {}
    knowledge = state.get("knowledge")
    known = knowledge.recs if knowledge else {}
    for hit in state["hits"]:
        for rec in hit.canonical:
            if rec.id not in candidates or hit.score > candidates[rec.id][1]:
                candidates[rec.id] = (known.get(rec.id) or rec_from_pb(rec), hit.score)
    turn = state["turn_state"]
    if state["query"].strategy != "direct":  # a follow-up: the session's patient
        merged = state["meta"].state.merged(turn)
        update: dict[str, Any] = {"age": merged.age, "sex": merged.sex, "tests": merged.tests}
        # "what if they were 80?": same patient, other age; "and if he has also lost weight?":
        # the same patient's symptoms and this one
        if not turn.names_clinical_terms or _ADDS.search(state["text"]):
            negated = [
                n for n in merged.negated if n not in turn.symptoms
            ]  # "no weight loss", then "also lost weight"
            update |= {"symptoms": merged.symptoms, "modifiers": merged.modifiers}
            update |= {"negated": negated, "cancer_sites": merged.cancer_sites}
        turn = turn.model_copy(update=update)
    # a process recommendation chosen by its wording, not found by search, leads at the score of
    # the process recommendations found with it
    wanted = [rid for rid in state.get("first", []) if rid in candidates or rid in known]
    lead = max((candidates[rid][1] for rid in wanted if rid in candidates), default=0.0)
    first = [candidates[rid] if rid in candidates else (known[rid], lead) for rid in wanted]
    return select(list(candidates.values()), knowledge, turn, state["request"].top_k, state["text"], first)


def _nearest(state: ChatState, n: int = 2) -> list[Citation]:
    """The best-scoring recommendations search found for the question (at most n)."""
    ranked = sorted(((r, s) for r, s in _scored_recs(state)), key=lambda rs: -rs[1])
    return [compose.rec_citation(r, s) for r, s in ranked[:n]]


def _scored_recs(state: ChatState) -> list[tuple[Any, float]]:
    """Each recommendation search found, with the best score of the hits that found it."""
    knowledge = state.get("knowledge")
    known = knowledge.recs if knowledge else {}
    best: dict[str, tuple[Any, float]] = {}
    for hit in state.get("hits", []):
        for rec in hit.canonical:
            if rec.id not in best or hit.score > best[rec.id][1]:
                best[rec.id] = (known.get(rec.id) or rec_from_pb(rec), hit.score)
    return list(best.values())


def _cited(state: ChatState, result: dict[str, Any]) -> dict[str, Any]:
    """No answer goes out without a citation: an answer or a contradicted premise that cites
    nothing says what NG12 does not say and cites the nearest recommendations found, or, when
    search found none, is a refusal."""
    if result.get("citations") or result.get("grounding") not in ("sufficient", "weak", "contradicted"):
        return result
    nearest = _nearest(state)
    if not nearest:
        return {"answer": compose.refuse(), "grounding": "none", "citations": []}
    if result["grounding"] == "contradicted":
        found = claims(state["text"])
        claimed = describe(found) if found else "that"
        return {
            "answer": compose.false_premise(claimed, nearest),
            "grounding": "contradicted",
            "citations": nearest,
        }
    return {"answer": compose.not_said(nearest), "grounding": "weak", "citations": nearest}


async def _answer(state: ChatState, deps: ChatDeps, hedged: bool) -> dict[str, Any]:
    """The answer, cited, after a mixed request's declined parts."""
    result = _cited(state, await _answer_text(state, deps, hedged))
    if state.get("declined"):  # a mixed request: the rest declined by name, first
        result["answer"] = compose.declined(state["declined"]) + result["answer"]
    return result


def _retrieved_recs(state: ChatState) -> list[Any]:
    """Each recommendation search found, in search's order."""
    knowledge = state.get("knowledge")
    known = knowledge.recs if knowledge else {}
    out: dict[str, Any] = {}
    for hit in state["hits"]:
        for rec in hit.canonical:
            out.setdefault(rec.id, known.get(rec.id) or rec_from_pb(rec))
    return list(out.values())


async def _definitions(state: ChatState, deps: ChatDeps, terms: list[str]) -> list[tuple[str, Citation]]:
    """NG12's definitions of these terms (its "Terms used in this guideline"), those it has."""
    version = state["guideline"].index_version if "guideline" in state else ""
    out: list[tuple[str, Citation]] = []
    for term in dict.fromkeys(terms):
        found = await definition_of(deps, version, term)
        if found is not None:
            out.append((term, found))
    return out


def _met_first(recs: list[Any], state: ChatState, eval_context: Any) -> list[Any]:
    """The recommendations to quote, those the patient described meets first (what NG12 does say
    for them: 1.2.1 and 1.2.7 for a 57-year-old with weight loss and dyspepsia), else as they are."""
    probe = state["turn_state"]
    if probe.age is None or not probe.symptoms or not recs:
        return recs
    facts = probe.model_copy(
        update={"modifiers": {s: ["unexplained", "persistent"] for s in probe.symptoms}}
    ).to_facts()
    results = evaluate_all(facts, eval_context, only=[r.id for r in recs])
    return sorted(recs, key=lambda r: not (r.id in results and results[r.id].met))


def _route_check(
    found: list[Claim], on_findings: list[Any], state: ChatState, eval_context: Any
) -> tuple[list[Claim], list[Any], str, list[str]]:
    """A route, urgency or deadline claimed for the findings named, against the actions of the
    recommendations a patient with those findings meets (chat.premise_action)."""
    probe = state["turn_state"]
    modifiers = {s: ["unexplained", "persistent"] for s in probe.symptoms}
    ids = [r.id for r in on_findings]

    @functools.cache
    def results_at(age: int) -> dict[str, Any]:
        facts = probe.model_copy(update={"age": age, "modifiers": modifiers}).to_facts()
        return evaluate_all(facts, eval_context, only=ids)

    verdict = route_contradicted(found, on_findings, results_at, probe_ages(found, probe.age))
    if verdict is None:
        only = restricted_group(claimed_text(state["text"]))
        verdict = group_contradicted(found, only, on_findings, results_at, probe.age)
    if verdict is None:
        return [], [], "", []
    by_id = {r.id: r for r in on_findings}
    return [verdict.claim], [by_id[rid] for rid in verdict.quoted], verdict.said, verdict.define


def _topic_symptoms(state: ChatState) -> set[str]:
    """The symptoms a claim is about: the message's own, else, for a follow-up that names none
    ("hmm, I thought you needed 5 or more to 2ww?"), the session's patient's."""
    turn = state["turn_state"]
    if turn.symptoms or state["query"].strategy == "direct" or turn.names_clinical_terms:
        return set(turn.symptoms)
    return set(state["meta"].state.merged(turn).symptoms)


async def _definition_check(
    state: ChatState, deps: ChatDeps, text: str
) -> tuple[list[Claim], list[Any], str, list[str]]:
    """A definition claimed for a term NG12 defines ("suspected cancer pathway referral = seen
    within 2 weeks, that's the definition?"), against NG12's own definition of the term."""
    claimed = claimed_definition(claimed_text(text))
    if claimed is None:
        return [], [], "", []
    term, what = claimed
    version = state["guideline"].index_version if "guideline" in state else ""
    passage = await definition_of(deps, version, term)
    if passage is None:
        return [], [], "", []
    contradicted = definition_contradicted(term, what, passage.excerpt)
    return (contradicted, [], "", [term]) if contradicted else ([], [], "", [])


#: NG12's defined term whose definition gives how soon an outcome follows a referral ("diagnosis or
#: ruling out of cancer within 28 days").
_OUTCOME_TERM = "Suspected cancer pathway referral"


async def _structured_check(
    state: ChatState,
    deps: ChatDeps,
    sel: Selection,
    found: list[claim_model.StructuredClaim],
    ctx: claim_check.Context,
) -> tuple[list[Claim], list[Any], str, list[str], set[tuple[str, str]]]:
    """A property claimed of NG12's recommendations (chat.claim_model: a sex, a prerequisite test,
    an order of tests, a group's cut-off, an outcome's timeframe, a count, an age floor, a route)
    held to the recommendations themselves, and an outcome's timeframe to NG12's definition; with
    the claims of chat.premise a structured claim that holds settles ((kind, value): a test of an
    order NG12 gives, a deadline NG12's definition gives), which are then not looked for in the
    recommendations' words."""
    version = state["guideline"].index_version if "guideline" in state else ""
    settled: set[tuple[str, str]] = set()
    for claim in (c for c in found if c.attribute == "timeframe"):
        passage = await definition_of(deps, version, _OUTCOME_TERM)
        if passage is None:
            continue
        if definition_contradicted(_OUTCOME_TERM, claim.text, passage.excerpt):
            shown = [r for r, _ in sel.recs]
            quoted = sorted(shown, key=lambda r: r.id not in sel.met)
            return [Claim("structured", claim.text, claim.value)], quoted, "", [_OUTCOME_TERM], settled
        # NG12's definition gives it: the deadline and the route it is claimed for are NG12's
        settled |= {("interval", claim.value), ("action", "suspected cancer pathway")}
    verdict = claim_check.contradicted(found, ctx, list(named_tests(state["text"])))
    settled |= claim_check.settled(found, ctx)
    if verdict is None:
        return [], [], "", [], settled
    claimed = Claim("structured", verdict.claim.text, verdict.claim.value)
    return [claimed], verdict.quoted, "", verdict.define, settled


def _claim_context(
    state: ChatState, knowledge: Any, every: list[Any], retrieved: list[Any], for_symptoms: list[Any]
) -> claim_check.Context:
    """What chat.claim_model checks a claim against, with the criteria engine for the patient."""
    turn = state["turn_state"]
    smoker = claim_model.smoking(state["text"])

    def met_for(
        symptoms: tuple[str, ...], age: int | None, smoking: str | None, ids: tuple[str, ...]
    ) -> frozenset[str]:
        if knowledge is None:
            return frozenset()
        modifiers = {s: ["unexplained", "persistent"] for s in symptoms}
        negated = [n for n in turn.negated if n not in symptoms]  # the probe has what it is given
        update = {"symptoms": list(symptoms), "age": age, "modifiers": modifiers, "negated": negated}
        facts = turn.model_copy(update=update)
        patient = facts.to_facts().model_copy(update={"smoking": smoking})
        found = evaluate_all(patient, knowledge.context, only=ids)
        return frozenset(rid for rid, result in found.items() if result.met)

    return claim_check.Context(
        every=every,
        retrieved=retrieved,
        for_symptoms=for_symptoms,
        symptoms=tuple(turn.symptoms),
        age=_patient_age(state),
        smoking=smoker,
        met_for=met_for,
    )


async def _answer_text(state: ChatState, deps: ChatDeps, hedged: bool) -> dict[str, Any]:
    """The answer and its grounding: a contradicted premise, NG12's definitions or passages, or the
    selected recommendations (weak when `hedged`, unless what they present supports it)."""
    request, text = state["request"], state["text"]
    sel = _selection(state)
    citations = [compose.rec_citation(rec, score) for rec, score in sel.recs]
    found_claims = claims(text)
    knowledge = state.get("knowledge")
    every = list(knowledge.recs.values()) if knowledge else []
    structured = claim_model.read(text, claim_model.site_words(every))
    if found_claims or structured or claimed_definition(claimed_text(text)) is not None:
        # what the question says NG12 says, checked against NG12's text
        retrieved = list({r.id: r for r in [*(r for r, _ in sel.recs), *_retrieved_recs(state)]}.values())
        wanted = _topic_symptoms(state)
        on_symptoms = [
            r for r in retrieved if wanted and r.criteria is not None and wanted & _concepts(r.criteria)
        ]
        for_symptoms = for_patient(on_symptoms, state["turn_state"].age)  # the patient's age group
        # a route or urgency NG12 gives those findings otherwise is named as such, before the
        # claims' words are looked for together (chat.premise's joint check)
        # a definition claimed for a term NG12 defines is held to NG12's own definition of it first
        contradicted, quoted, said, define = await _definition_check(state, deps, text)
        if not contradicted and structured:
            ctx = _claim_context(state, knowledge, every, retrieved, for_symptoms)
            contradicted, quoted, said, define, settled = await _structured_check(
                state, deps, sel, structured, ctx
            )
            found_claims = [c for c in found_claims if (c.kind, c.value) not in settled]
        if not contradicted:
            contradicted, quoted, said, define = (
                _route_check(found_claims, for_symptoms, state, knowledge.context)
                if knowledge
                else ([], [], "", [])
            )
        if not contradicted:
            contradicted, quoted = check(found_claims, retrieved, every, for_symptoms, wanted)
            if contradicted and knowledge is not None:
                quoted = _met_first(quoted, state, knowledge.context)
        if not contradicted and knowledge is not None:
            probe = state["turn_state"]
            modifiers = {s: ["unexplained", "persistent"] for s in probe.symptoms}
            eval_context = knowledge.context

            ids = [r.id for r in for_symptoms]

            @functools.cache
            def met_at(age: int) -> frozenset[str]:
                """The recommendations on the symptoms this patient meets at `age` (each age
                evaluated once, for all of them)."""
                facts = probe.model_copy(update={"age": age, "modifiers": modifiers}).to_facts()
                found = evaluate_all(facts, eval_context, only=ids)
                return frozenset(rid for rid, result in found.items() if result.met)

            universal = universal_contradicted(found_claims, for_symptoms, met_at, wanted)
            if universal is not None:
                contradicted, quoted = [universal], for_symptoms
        if contradicted:
            quotes = [compose.rec_citation(r) for r in quoted[:3]]
            compared, _ = results_lead(_patient_tests(state), _patient_age(state), every)
            if claims_definition(claimed_text(text)):  # "NG12 defines children as under 18"
                define = [*define, *defined_terms(claimed_text(text))]
            defined = await _definitions(state, deps, define)  # the terms the claim is about
            lead = "\n\n".join(compose.definition(term, c) for term, c in defined)
            compared = " ".join(x for x in (said, compared) if x)
            return {
                "answer": compose.false_premise(describe(contradicted), quotes, compared, lead),
                "grounding": "contradicted",
                "citations": [*(c for _, c in defined), *quotes],
            }
    definition = state.get("definition")
    lead = ""
    if definition is not None:
        passage = hits_to_citations([definition])[0]
        lead = compose.definition(state.get("term") or "", passage) + "\n\n"
        # a question about several terms ("urgent and very urgent?"): each defined, in turn
        version = state["guideline"].index_version if "guideline" in state else ""
        more: list[Citation] = [passage]
        for other in asked_definitions(text)[1:]:
            found = await definition_of(deps, version, other)
            if found is not None and found.excerpt not in {c.excerpt for c in more}:
                lead += compose.definition(other, found) + "\n\n"
                more.append(found)
        passage_list = more
        if not state["turn_state"].names_clinical_terms and state.get("term") != "safety netting":
            return {
                "answer": compose.with_disclaimer(lead),
                "grounding": "sufficient",
                "citations": passage_list,
            }
        citations = [*passage_list, *citations]
    if not sel.recs:  # only guideline prose matched: quote the best passages
        prose = hits_to_citations(state["hits"])[: min(2, request.top_k)]
        if definition is not None:
            return {
                "answer": compose.with_disclaimer(lead),
                "grounding": "sufficient",
                "citations": citations,
            }
        if not prose:
            return {"answer": compose.refuse(), "grounding": "none", "citations": []}
        body = compose.passages(prose)
        return {"answer": compose.qualify(body), "grounding": "weak", "citations": prose}
    citations += [compose.rec_citation(m.rec) for m in sel.near_misses[:2]]
    extra, passages = await context(state, deps, sel, text)
    knowledge = state.get("knowledge")
    compared, compared_recs = results_lead(
        _patient_tests(state), _patient_age(state), knowledge.recs.values() if knowledge else []
    )
    if compared:  # the patient's results against NG12's thresholds
        extra = f"{compared}\n\n{extra}"
        have = {c.recommendation_id for c in citations}
        citations += [compose.rec_citation(r) for r in compared_recs if r.id not in have]
    lead += extra
    citations += passages
    concept_match = _names_criteria_concept(sel, state["turn_state"])
    age = sel.near_misses[0].age if sel.near_misses else state["turn_state"].age
    # an age question the presented recommendations' age criteria answer ("what about a 45
    # year old?": the PSA band for 45 in 1.6.3) is answered by NG12's own structure
    recs = [r for r, _ in sel.recs]
    age_answer = asks_about_age(text) and compose.age_thresholds(recs, age) is not None
    supported = sel.met or concept_match or definition is not None or age_answer
    grounding: Grounding = "sufficient" if (not hedged or supported) else "weak"
    body = compose.extractive(sel, age, quote_term(text), asks_about_age(text), state["turn_state"].symptoms)
    if deps.writer is not None:
        written = await deps.writer.write(await redacted_text(state, text), sel, body)
        if written is not None:
            body = written
    body = lead + body
    return {
        "answer": compose.qualify(body) if grounding == "weak" else body,
        "grounding": grounding,
        "citations": citations,
    }


async def generate(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The answer when the evidence is sufficient."""
    return await _answer(state, deps, hedged=False)


async def qualify(state: ChatState, deps: ChatDeps) -> dict[str, Any]:
    """The answer when the evidence is weak: hedged unless what it presents supports it."""
    return await _answer(state, deps, hedged=True)
