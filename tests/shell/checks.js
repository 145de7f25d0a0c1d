// The checks the shell scripts share, loaded first by each (load(__dirname + '/checks.js')).
// A failed check throws, which makes mongosh exit non-zero.

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

// Compares as canonical Extended JSON, so types (Int32 vs Long vs Double) and field order count.
function checkEq(actual, expected, what) {
  const a = EJSON.stringify(actual, { relaxed: false });
  const e = EJSON.stringify(expected, { relaxed: false });
  if (a !== e) throw new Error('check failed: ' + what + ': expected ' + e + ', got ' + a);
}

// `fn` must throw a server error with `code`.
function checkCode(fn, code, what) {
  try {
    fn();
  } catch (e) {
    checkEq(e.code, code, what);
    return;
  }
  throw new Error('check failed: ' + what + ': no error');
}
