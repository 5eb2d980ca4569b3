#!/usr/bin/env bash
# Regenerates the APNs token-signing test keys in this folder: the .p8 files of HTTP/2 token
# authentication (Apple's AuthKey_<KEYID>.p8: EC P-256, unencrypted PKCS#8 PEM) and the bad .p8
# files the key loader must refuse with a clear error. regenerate.sh runs this too; it can also be
# run on its own (it touches only the files it makes). Throwaway test keys, valid forever (keys
# have no expiry). Passphrase of p8-encrypted.p8: the first line of passphrase.txt ("secret").
#
# Needs the openssl 3 command line. Run from anywhere: ./Fixtures/certs/regenerate-keys.sh
set -euo pipefail
cd "$(dirname "$0")"

rm -f ./AuthKey_*.p8 ./AuthKey_*.pub.pem ./p8-*.p8

# --- good keys, as the developer portal hands them out ---------------------------------------------
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out AuthKey_ABC123DEFG.p8
openssl pkey -in AuthKey_ABC123DEFG.p8 -pubout -out AuthKey_ABC123DEFG.pub.pem
# A second, unrelated key (for "signed with the wrong key").
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out AuthKey_ZYX987WVUT.p8

# --- keys APNs does not take -----------------------------------------------------------------------
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out p8-rsa.p8 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p8-p384.p8
openssl genpkey -algorithm ED25519 -out p8-ed25519.p8
# Encrypted PKCS#8 (BEGIN ENCRYPTED PRIVATE KEY), AES-256-CBC with PBKDF2.
openssl pkcs8 -topk8 -v2 aes-256-cbc -in AuthKey_ABC123DEFG.p8 -out p8-encrypted.p8 -passout file:passphrase.txt
# Valid PEM armor around a damaged base64 body: the first 8 characters of the first body line
# become '*', which is not base64.
sed '2s/^......../********/' AuthKey_ZYX987WVUT.p8 > p8-corrupt.p8

echo "regenerated $(ls AuthKey_* p8-*.p8 | wc -l) signing-key files in $(pwd)"
