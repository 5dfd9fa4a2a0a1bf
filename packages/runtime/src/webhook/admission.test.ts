import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MalformedReviewError,
  errorBody,
  fieldErrors,
  invalidStatus,
  parseAdmissionReview,
} from './admission.ts';

const review = (request: unknown) =>
  JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
const good = {
  uid: 'u1',
  kind: { group: 'regulon.dev', version: 'v1alpha1', kind: 'Database' },
  resource: { group: 'regulon.dev', version: 'v1alpha1', resource: 'databases' },
  operation: 'CREATE',
  userInfo: { username: 'alice' },
  object: { metadata: { name: 'db' } },
};

test('a well-formed review parses', () => {
  const req = parseAdmissionReview(review(good));
  assert.equal(req.uid, 'u1');
  assert.equal(req.kind.kind, 'Database');
  assert.equal(req.userInfo.username, 'alice');
});

test('each malformed review is refused with a message saying what is wrong', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /not JSON/],
    ['[1]', /not a JSON object/],
    [
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview' }),
      /expected an admission.k8s.io\/v1/,
    ],
    [review(undefined), /no request/],
    [review({ ...good, uid: '' }), /uid/],
    [review({ ...good, operation: 'PATCH' }), /operation "PATCH"/],
    [review({ ...good, kind: 'Database' }), /request.kind/],
    [review({ ...good, object: null }), /CREATE request without request.object/],
    [review({ ...good, operation: 'UPDATE' }), /UPDATE request without request.oldObject/],
  ];
  for (const [body, message] of cases)
    assert.throws(
      () => parseAdmissionReview(body),
      (err: unknown) => err instanceof MalformedReviewError && message.test(err.message),
      body,
    );
});

test("field errors read as the API server's own, one cause per field", () => {
  const errors = [
    fieldErrors.invalid('spec.credentials.secretName', 'creds', 'Secret creds has no key password'),
    fieldErrors.required('spec.engine', ''),
  ];
  assert.equal(errorBody(errors[0]!), 'Invalid value: "creds": Secret creds has no key password');
  assert.equal(errorBody(errors[1]!), 'Required value');
  const status = invalidStatus({ group: 'regulon.dev', version: 'v1alpha1', kind: 'Database' }, 'db', errors);
  assert.equal(status.code, 422);
  assert.equal(status.reason, 'Invalid');
  assert.equal(
    status.message,
    'Database.regulon.dev "db" is invalid: [spec.credentials.secretName: Invalid value: "creds": Secret creds has no key password, spec.engine: Required value]',
  );
  assert.deepEqual(status.details?.causes?.[1], {
    reason: 'FieldValueRequired',
    message: 'Required value',
    field: 'spec.engine',
  });
  const one = invalidStatus({ group: '', version: 'v1', kind: 'ConfigMap' }, 'c', [
    fieldErrors.forbidden('data', 'no'),
  ]);
  assert.equal(one.message, 'ConfigMap "c" is invalid: data: Forbidden: no');
});
