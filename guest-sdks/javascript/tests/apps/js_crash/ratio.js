// The ratio of two numbers, refusing zero as a divisor by crashing.

export function ratio(a, b) {
  if (b === 0) {
    throw new RangeError("division by zero in ratio.js");
  }
  return a / b;
}
