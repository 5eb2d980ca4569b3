#!/usr/bin/env bash
# Regenerates every test certificate, key and PKCS#12 file in this folder.
#
# The certificates are shaped like Apple's push certificates (subject UID = bundle id, CN with the
# "Apple ... Push Services:" prefix, OU = team id, the 1.2.840.113635.100.6.3.x extensions) but are
# issued by a throwaway test CA. They are valid for about a century so CI never breaks on expiry;
# `expired` is expired on purpose. Passphrase for every protected file: "secret" (see
# passphrase.txt); the *-nopass files use the empty passphrase.
#
# Needs the openssl 3 command line. Run from anywhere: ./Fixtures/certs/regenerate.sh
set -euo pipefail
cd "$(dirname "$0")"

DAYS=36500
PASS=secret
BUNDLE=com.example.legacy
TEAM=TEAM123456
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rm -f ./*.pem ./*.key ./*.p12 ./*.cer ./*.srl

# --- extension profiles -------------------------------------------------------------------------
cat > "$work/ext.cnf" <<CNF
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[intermediate_ext]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[client_common]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[universal_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.3.1 = ASN1:NULL
1.2.840.113635.100.6.3.2 = ASN1:NULL
1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:topics

[development_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.3.1 = ASN1:NULL

[production_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
1.2.840.113635.100.6.3.2 = ASN1:NULL

[topics]
topic1 = UTF8:$BUNDLE
kinds1 = SEQUENCE:kinds_app
topic2 = UTF8:$BUNDLE.voip
kinds2 = SEQUENCE:kinds_voip
topic3 = UTF8:$BUNDLE.complication
kinds3 = SEQUENCE:kinds_complication

[kinds_app]
kind1 = UTF8:app

[kinds_voip]
kind1 = UTF8:voip

[kinds_complication]
kind1 = UTF8:complication
CNF

# --- certificate authorities --------------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days $DAYS -sha256 \
    -subj "/CN=LegacyAPNs Test Root CA/O=LegacyAPNs Tests" -extensions ca_ext -config <(cat /usr/lib/ssl/openssl.cnf "$work/ext.cnf") 2>/dev/null
openssl req -new -newkey rsa:2048 -nodes -keyout wwdr.key -out "$work/wwdr.csr" \
    -subj "/CN=LegacyAPNs Test Worldwide Developer Relations CA/OU=G4/O=LegacyAPNs Tests" 2>/dev/null
openssl x509 -req -in "$work/wwdr.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out wwdr.pem -days $DAYS -sha256 \
    -extfile "$work/ext.cnf" -extensions intermediate_ext 2>/dev/null
# A second, unrelated CA: nothing trusts it.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/untrusted-ca.key" -out untrusted-ca.pem -days $DAYS -sha256 \
    -subj "/CN=Untrusted Test CA/O=Somebody Else" -extensions ca_ext -config <(cat /usr/lib/ssl/openssl.cnf "$work/ext.cnf") 2>/dev/null

# --- the simulator's server identity (127.0.0.1 and localhost), ECDSA P-256 -----------------------
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out "$work/server.csr" \
    -subj "/CN=localhost/O=LegacyAPNs Test Gateway" 2>/dev/null
openssl x509 -req -in "$work/server.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days $DAYS -sha256 \
    -extfile "$work/ext.cnf" -extensions server_ext 2>/dev/null
# A server certificate from the untrusted CA, for "untrusted server" tests.
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout untrusted-server.key -out "$work/us.csr" \
    -subj "/CN=localhost/O=Impostor Gateway" 2>/dev/null
openssl x509 -req -in "$work/us.csr" -CA untrusted-ca.pem -CAkey "$work/untrusted-ca.key" -CAcreateserial \
    -out untrusted-server.pem -days $DAYS -sha256 -extfile "$work/ext.cnf" -extensions server_ext 2>/dev/null

# --- provider (client) certificates ---------------------------------------------------------------
client() { # name, CN prefix, extension section, issuer cert, issuer key
    local name=$1 prefix=$2 section=$3 issuer=$4 issuerkey=$5
    openssl req -new -newkey rsa:2048 -nodes -keyout "$name.key" -out "$work/$name.csr" \
        -subj "/UID=$BUNDLE/CN=$prefix$BUNDLE/OU=$TEAM/O=Example Corp/C=US" 2>/dev/null
    openssl x509 -req -in "$work/$name.csr" -CA "$issuer" -CAkey "$issuerkey" -CAcreateserial -out "$name.pem" \
        -days $DAYS -sha256 -extfile "$work/ext.cnf" -extensions "$section" 2>/dev/null
}
client universal "Apple Push Services: " universal_ext wwdr.pem wwdr.key
client development "Apple Development IOS Push Services: " development_ext wwdr.pem wwdr.key
client production "Apple Production IOS Push Services: " production_ext wwdr.pem wwdr.key
client untrusted "Apple Push Services: " universal_ext untrusted-ca.pem "$work/untrusted-ca.key"

# Expired: issued for 2019 only (openssl ca can set explicit dates).
mkdir -p "$work/ca/newcerts"
: > "$work/ca/index.txt"
echo 1000 > "$work/ca/serial"
cat > "$work/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
dir = $work/ca
database = \$dir/index.txt
new_certs_dir = \$dir/newcerts
serial = \$dir/serial
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
[anything]
UID = optional
commonName = supplied
organizationalUnitName = optional
organizationName = optional
countryName = optional
CNF
cat "$work/ext.cnf" >> "$work/ca.cnf"
openssl req -new -newkey rsa:2048 -nodes -keyout expired.key -out "$work/expired.csr" \
    -subj "/UID=$BUNDLE/CN=Apple Push Services: $BUNDLE/OU=$TEAM/O=Example Corp/C=US" 2>/dev/null
openssl ca -batch -config "$work/ca.cnf" -cert wwdr.pem -keyfile wwdr.key -in "$work/expired.csr" -out "$work/expired.full" \
    -startdate 20190101000000Z -enddate 20200101000000Z -extensions universal_ext -notext 2>/dev/null
openssl x509 -in "$work/expired.full" -out expired.pem

# --- key and certificate encodings ---------------------------------------------------------------
openssl rsa -in universal.key -traditional -out universal-pkcs1.key 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in universal.key -out universal-pkcs8.key
openssl pkcs8 -topk8 -v2 aes-256-cbc -in universal.key -out universal-encrypted.key -passout pass:$PASS
openssl rsa -in universal.key -traditional -aes128 -out universal-encrypted-pkcs1.key -passout pass:$PASS 2>/dev/null
mv universal-pkcs8.key universal.key
cat universal.pem universal.key > universal-combined.pem
openssl x509 -in universal.pem -outform DER -out universal.cer
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out other.key 2>/dev/null
cat wwdr.pem ca.pem > chain.pem

# --- PKCS#12 files in every encryption style ------------------------------------------------------
p12() { # output, cert, key, passphrase, extra flags...
    local out=$1 cert=$2 key=$3 pass=$4
    shift 4
    openssl pkcs12 -export -in "$cert" -inkey "$key" -certfile wwdr.pem -name "$(basename "$out" .p12)" \
        -out "$out" -passout "pass:$pass" "$@"
}
# Modern: AES-256-CBC + PBKDF2, SHA-256 MAC (OpenSSL 3 defaults).
p12 universal-modern.p12 universal.pem universal.key $PASS
p12 universal-modern-nopass.p12 universal.pem universal.key ""
# 3DES for both bags, SHA-1 MAC (loads without the legacy provider).
p12 universal-3des.p12 universal.pem universal.key $PASS -certpbe PBE-SHA1-3DES -keypbe PBE-SHA1-3DES -macalg sha1
# Keychain style: RC2-40 certificate bag, 3DES key bag, SHA-1 MAC (needs the legacy provider).
p12 universal-legacy.p12 universal.pem universal.key $PASS -legacy
p12 universal-legacy-nopass.p12 universal.pem universal.key "" -legacy
p12 development.p12 development.pem development.key $PASS -legacy
p12 production.p12 production.pem production.key $PASS
p12 expired.p12 expired.pem expired.key $PASS
openssl pkcs12 -export -in untrusted.pem -inkey untrusted.key -certfile untrusted-ca.pem -name untrusted \
    -out untrusted.p12 -passout pass:$PASS
# No encryption at all (openssl -keypbe NONE -certpbe NONE), still with a MAC.
p12 universal-unencrypted.p12 universal.pem universal.key $PASS -keypbe NONE -certpbe NONE
# No MAC at all (-nomac): nothing checks the passphrase before decryption is tried.
p12 universal-nomac.p12 universal.pem universal.key $PASS -nomac

# --- PKCS#12 files with more than one key ------------------------------------------------------------
# `openssl pkcs12 -export` writes one key per file, so these are joined from such files: the
# ContentInfos of their AuthenticatedSafes, in the order given, under a fresh SHA-256 MAC
# (PKCS12KDF id 3, 2048 iterations, as OpenSSL 3 makes them), assembled with asn1parse -genconf.
safes() { # p12 -> stdout: the ContentInfos of its AuthenticatedSafe (without the SEQUENCE header)
    local offset header
    offset=$(openssl asn1parse -inform DER -in "$1" | awk -F: '/d=3 .*OCTET STRING/ { print $1 + 0; exit }')
    openssl asn1parse -inform DER -in "$1" -strparse "$offset" -noout -out "$work/safes.der"
    header=$(openssl asn1parse -inform DER -in "$work/safes.der" | awk 'NR == 1 { sub("hl=", "", $2); print $2 }')
    tail -c +$((header + 1)) "$work/safes.der"
}
joinp12() { # output, inputs... (all protected with $PASS)
    local out=$1 length salt hexpass key mac
    shift
    for input in "$@"; do safes "$input"; done > "$work/items.der"
    length=$(stat -c %s "$work/items.der")
    { printf '3082%04x' "$length" | xxd -r -p; cat "$work/items.der"; } > "$work/joined.der"
    salt=$(openssl rand -hex 8)
    hexpass=$(printf '%s' "$PASS" | iconv -f UTF-8 -t UTF-16BE | xxd -p | tr -d '\n')0000  # BMPString + NUL
    key=$(openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt hexpass:"$hexpass" -kdfopt hexsalt:"$salt" \
        -kdfopt iter:2048 -kdfopt id:3 PKCS12KDF | tr -d ':')
    mac=$(openssl dgst -sha256 -mac HMAC -macopt hexkey:"$key" -binary "$work/joined.der" | xxd -p | tr -d '\n')
    cat > "$work/pfx.cnf" <<CNF
asn1 = SEQUENCE:pfx
[pfx]
version = INTEGER:3
authSafe = SEQUENCE:authsafe
macData = SEQUENCE:macdata
[authsafe]
type = OID:pkcs7-data
content = EXPLICIT:0,FORMAT:HEX,OCTETSTRING:$(xxd -p "$work/joined.der" | tr -d '\n')
[macdata]
mac = SEQUENCE:digestinfo
salt = FORMAT:HEX,OCTETSTRING:$salt
iterations = INTEGER:2048
[digestinfo]
algorithm = SEQUENCE:sha256
digest = FORMAT:HEX,OCTETSTRING:$mac
[sha256]
oid = OID:sha256
parameters = NULL
CNF
    openssl asn1parse -genconf "$work/pfx.cnf" -noout -out "$out"
}
p12 "$work/universal-part.p12" universal.pem universal.key $PASS
p12 "$work/development-part.p12" development.pem development.key $PASS
openssl pkcs12 -export -nocerts -inkey other.key -name stray -out "$work/stray-part.p12" -passout pass:$PASS 2>/dev/null
# A stray key next to the universal identity, before it and after it: the matching key is used.
joinp12 stray-key-first.p12 "$work/stray-part.p12" "$work/universal-part.p12"
joinp12 stray-key-last.p12 "$work/universal-part.p12" "$work/stray-part.p12"
# Two complete identities (universal and development), in both orders: refused as ambiguous.
joinp12 two-identities.p12 "$work/universal-part.p12" "$work/development-part.p12"
joinp12 two-identities-reversed.p12 "$work/development-part.p12" "$work/universal-part.p12"

printf '%s\n' "$PASS" > passphrase.txt
rm -f ./*.srl

# --- APNs token-signing keys (.p8) ----------------------------------------------------------------
# In their own script (also runnable alone), run here because the rm at the top also removed
# AuthKey_ABC123DEFG.pub.pem with the other *.pem files.
./regenerate-keys.sh
echo "regenerated $(ls | wc -l) files in $(pwd)"
