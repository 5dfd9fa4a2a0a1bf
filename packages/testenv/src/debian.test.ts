// Unit tests of the Debian package check: it asks dpkg, and without the right
// to install it says exactly what is missing and how to install it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ensureDebianPackages, missingDebianPackages } from './debian.ts';

// Every Debian system has these installed (Essential: yes).
const essential = ['bash', 'coreutils'];
const absent = 'regulon-no-such-package';

describe('Debian packages', () => {
  test('missingDebianPackages names only the packages dpkg does not have installed', async () => {
    assert.deepEqual(await missingDebianPackages([...essential, absent]), [absent]);
    assert.deepEqual(await missingDebianPackages(essential), []);
  });

  test('a name that is not a Debian package name is rejected, not passed to dpkg or apt', async () => {
    await assert.rejects(missingDebianPackages(['bash', '--purge']), /not Debian package names: --purge/);
  });

  test('ensureDebianPackages returns when everything is installed', async () => {
    await ensureDebianPackages(essential, 'a test', { install: false });
  });

  test('without install, the error says what needs which packages and the command to install them', async () => {
    await assert.rejects(
      ensureDebianPackages([...essential, absent], 'a test', { install: false }),
      (err: Error) => {
        assert.equal(
          err.message,
          `testenv: a test needs the Debian packages ${absent}, which are not installed. ` +
            `Install them as root: apt-get install -y --no-install-recommends ${absent}`,
        );
        return true;
      },
    );
  });
});
