// The contract's `round` records the unit tests hand to the exports, in the
// shapes componentize-js lifts (records as objects, variants as {tag, val},
// lists of pairs as arrays).

const encoder = new TextEncoder();

/** A client that can answer nothing. */
export const NO_CLIENT = {
  elicitationForm: false,
  elicitationUrl: false,
  sampling: false,
  samplingTools: false,
  samplingContext: false,
  roots: false,
  tasks: false,
};

/** A client that can answer forms only. */
export const FORMS_ONLY = { ...NO_CLIENT, elicitationForm: true };

/** A first round for `client`. */
export const firstRound = (client = NO_CLIENT) => ({ number: 1, responses: [], state: undefined, client, task: false });

/**
 * A retry carrying `responses` ([key, response] pairs) and `state`: bytes as
 * a round returned them, a JSON value, or `undefined` for none.
 */
export const retry = (state, responses, client = FORMS_ONLY) => ({
  number: 2,
  responses,
  state: state === undefined || state instanceof Uint8Array ? state : encoder.encode(JSON.stringify(state)),
  client,
  task: false,
});

/** A form answer: `accept` with `content`, or another action without. */
export const answered = (action, content = undefined) => ({
  tag: "elicitation",
  val: { action, content: content === undefined ? undefined : JSON.stringify(content) },
});
