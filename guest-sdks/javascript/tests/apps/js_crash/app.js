// `divide`: a tool with two bugs, for the tests of what a crash reports. Its
// stack must name these lines, and those of ratio.js, not the bundle's.
import { tool } from "airlock-guest";
import { ratio } from "./ratio.js";

export { tools } from "airlock-guest";

tool(
  {
    name: "divide",
    description: "Divides `a` by `b`; crashes here when `here` is true, in ratio.js when `b` is 0.",
  },
  (call) => String(quotient(call.arguments)),
);

function quotient(args) {
  if (args.here) {
    throw new RangeError("crashed in app.js");
  }
  return ratio(args.a, args.b);
}
