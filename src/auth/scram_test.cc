#include "auth/scram.h"

#include <gtest/gtest.h>

#include "auth/crypto.h"
#include "auth/saslprep.h"

namespace hourglass::auth {
namespace {

ScramConversation::CredentialLookup LookupOf(std::string user, ScramCredentials c) {
  return [user, c](const std::string& name) -> StatusWith<std::optional<ScramCredentials>> {
    if (name != user) return std::optional<ScramCredentials>();
    return std::optional<ScramCredentials>(c);
  };
}

TEST(CryptoTest, Base64RoundTripsAndRefusesWhatIsNotCanonical) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("n,,"), "biws");
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  EXPECT_EQ(Base64Decode("YWI=").value(), "ab");
  EXPECT_EQ(Base64Decode("YQ==").value(), "a");
  EXPECT_EQ(Base64Decode("YWJj").value(), "abc");
  EXPECT_FALSE(Base64Decode("YWI").ok());   // not a multiple of 4
  EXPECT_FALSE(Base64Decode("Y=I=").ok());  // padding inside
  EXPECT_FALSE(Base64Decode("YW I").ok());  // whitespace
  EXPECT_FALSE(Base64Decode("YW*=").ok());
}

TEST(CryptoTest, Md5HexIsMongoDbsPasswordDigest) {
  // The digest drivers compute for SCRAM-SHA-1 (user "user", password "pencil").
  EXPECT_EQ(Md5Hex("user:mongo:pencil"), "1c33006ec1ffd90f9cadcbcc0e118200");
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
}

TEST(SaslPrepTest, MapsAndRefusesAsRfc4013) {
  EXPECT_EQ(SaslPrep("pencil").value(), "pencil");
  EXPECT_EQ(SaslPrep("I\xC2\xAD"
                     "X")
                .value(),
            "IX");                                    // soft hyphen maps to nothing
  EXPECT_EQ(SaslPrep("\xE2\x85\xA8").value(), "IX");  // ROMAN NUMERAL NINE, NFKC
  EXPECT_EQ(SaslPrep("a\xC2\xA0"
                     "b")
                .value(),
            "a b");                              // non-ASCII space maps to space
  EXPECT_EQ(SaslPrep("\xC2\xAA").value(), "a");  // FEMININE ORDINAL, NFKC
  EXPECT_FALSE(SaslPrep("a\x07").ok());          // ASCII control character
  EXPECT_FALSE(SaslPrep("\xD8\xA7"
                        "1")
                   .ok());              // RandALCat then L/EN: bidi rule
  EXPECT_FALSE(SaslPrep("\xff").ok());  // not UTF-8
}

// RFC 7677's example conversation, SCRAM-SHA-256 with password "pencil".
TEST(ScramTest, Rfc7677Sha256Conversation) {
  StatusWith<std::string> salt = Base64Decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  ASSERT_TRUE(salt.ok());
  ScramCredentials c =
      DeriveScramCredentials(ScramMechanism::kSha256, "pencil", salt.value(), 4096);
  ScramConversation conv(ScramMechanism::kSha256, true);
  conv.SetServerNonceForTest("%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  auto first = conv.Step("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", LookupOf("user", c));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first.value().payload,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
            "i=4096");
  EXPECT_FALSE(first.value().done);
  auto final_reply = conv.Step(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
      LookupOf("user", c));
  ASSERT_TRUE(final_reply.ok()) << final_reply.status().ToString();
  EXPECT_EQ(final_reply.value().payload, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
  EXPECT_TRUE(final_reply.value().done);
  EXPECT_TRUE(conv.authenticated());
  EXPECT_EQ(conv.user(), "user");
}

// RFC 5802's example, SCRAM-SHA-1 keyed by the raw password (MongoDB digests it first).
TEST(ScramTest, Rfc5802Sha1ConversationWithoutSkippingTheEmptyExchange) {
  StatusWith<std::string> salt = Base64Decode("QSXCR+Q6sek8bf92");
  ASSERT_TRUE(salt.ok());
  ScramCredentials c = DeriveScramCredentials(ScramMechanism::kSha1, "pencil", salt.value(), 4096);
  ScramConversation conv(ScramMechanism::kSha1, false);
  conv.SetServerNonceForTest("3rfcNHYJY1ZVvWVs7j");
  auto first = conv.Step("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL", LookupOf("user", c));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value().payload,
            "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096");
  auto second = conv.Step(
      "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
      LookupOf("user", c));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second.value().payload, "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=");
  EXPECT_FALSE(second.value().done);
  EXPECT_FALSE(conv.done());
  EXPECT_FALSE(conv.Step("x", LookupOf("user", c)).ok());  // the last message must be empty
  ScramConversation again(ScramMechanism::kSha1, false);
  again.SetServerNonceForTest("3rfcNHYJY1ZVvWVs7j");
  ASSERT_TRUE(again.Step("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL", LookupOf("user", c)).ok());
  ASSERT_TRUE(again
                  .Step("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
                        "p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
                        LookupOf("user", c))
                  .ok());
  auto last = again.Step("", LookupOf("user", c));
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last.value().done);
  EXPECT_EQ(last.value().payload, "");
  EXPECT_TRUE(again.done());
}

TEST(ScramTest, MongoDbSha1CredentialsDigestThePasswordWithTheUserName) {
  StatusWith<std::string> prepared = ScramPassword(ScramMechanism::kSha1, "user", "pencil");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared.value(), "1c33006ec1ffd90f9cadcbcc0e118200");
  auto made = MakeScramCredentials(ScramMechanism::kSha256, "user", "pencil", 15000);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made.value().salt.size(), 28u);
  EXPECT_EQ(made.value().iteration_count, 15000);
  EXPECT_EQ(made.value().stored_key.size(), 32u);
  auto sha1 = MakeScramCredentials(ScramMechanism::kSha1, "user", "pencil", 10000);
  ASSERT_TRUE(sha1.ok());
  EXPECT_EQ(sha1.value().salt.size(), 16u);
  EXPECT_EQ(sha1.value().stored_key.size(), 20u);
  // Same password, same salt: the same keys; another salt: other keys.
  ScramCredentials again =
      DeriveScramCredentials(ScramMechanism::kSha256, "pencil", made.value().salt, 15000);
  EXPECT_EQ(again.stored_key, made.value().stored_key);
  EXPECT_EQ(again.server_key, made.value().server_key);
  EXPECT_NE(made.value().salt,
            MakeScramCredentials(ScramMechanism::kSha256, "user", "pencil", 15000).value().salt);
}

TEST(ScramTest, AWrongProofAndAnUnknownUserFailAlike) {
  ScramCredentials c = DeriveScramCredentials(ScramMechanism::kSha256, "pencil", "saltsalt", 4096);
  ScramConversation wrong(ScramMechanism::kSha256, true);
  ASSERT_TRUE(wrong.Step("n,,n=user,r=abc", LookupOf("user", c)).ok());
  // A proof of the right length that is not the password's.
  std::string proof = Base64Encode(std::string(32, 'x'));
  std::string nonce_attr;
  {
    ScramConversation probe(ScramMechanism::kSha256, true);
    probe.SetServerNonceForTest("SERVER");
    ASSERT_TRUE(probe.Step("n,,n=user,r=abc", LookupOf("user", c)).ok());
    auto r = probe.Step("c=biws,r=abcSERVER,p=" + proof, LookupOf("user", c));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kAuthenticationFailed);
    EXPECT_FALSE(probe.authenticated());
    EXPECT_FALSE(probe.Step("", LookupOf("user", c)).ok());  // a failed conversation stays failed
  }
  ScramConversation unknown(ScramMechanism::kSha256, true);
  auto r = unknown.Step("n,,n=nobody,r=abc", LookupOf("user", c));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kAuthenticationFailed);
}

TEST(ScramTest, MalformedMessagesAreRefused) {
  ScramCredentials c = DeriveScramCredentials(ScramMechanism::kSha256, "pencil", "saltsalt", 4096);
  auto first_fails = [&](std::string_view msg) {
    ScramConversation conv(ScramMechanism::kSha256, true);
    return !conv.Step(msg, LookupOf("user", c)).ok();
  };
  EXPECT_TRUE(first_fails(""));
  EXPECT_TRUE(first_fails("n,,n=user"));                   // no nonce
  EXPECT_TRUE(first_fails("p=tls-unique,,n=user,r=abc"));  // channel binding asked for
  EXPECT_TRUE(first_fails("n,,m=ext,n=user,r=abc"));       // mandatory extension
  EXPECT_TRUE(first_fails("n,,n=us=er,r=abc"));            // bad escape
  EXPECT_TRUE(first_fails("n,,r=abc,n=user"));             // out of order
  EXPECT_TRUE(first_fails("n,a=other,n=user,r=abc"));      // authzid of another user
  EXPECT_FALSE(first_fails("n,a=user,n=user,r=abc"));
  EXPECT_FALSE(first_fails("y,,n=user,r=abc"));

  // Escaped names reach the lookup decoded.
  std::string seen;
  ScramConversation escaped(ScramMechanism::kSha256, true);
  ASSERT_FALSE(escaped
                   .Step("n,,n=a=2Cb=3Dc,r=abc",
                         [&](const std::string& u) -> StatusWith<std::optional<ScramCredentials>> {
                           seen = u;
                           return std::optional<ScramCredentials>();
                         })
                   .ok());
  EXPECT_EQ(seen, "a,b=c");

  auto final_fails = [&](std::string_view msg) {
    ScramConversation conv(ScramMechanism::kSha256, true);
    conv.SetServerNonceForTest("S");
    EXPECT_TRUE(conv.Step("n,,n=user,r=abc", LookupOf("user", c)).ok());
    return !conv.Step(msg, LookupOf("user", c)).ok();
  };
  std::string proof = Base64Encode(std::string(32, 'x'));
  EXPECT_TRUE(final_fails("c=biws,r=abcS"));             // no proof
  EXPECT_TRUE(final_fails("c=eSws,r=abcS,p=" + proof));  // binding of another header
  EXPECT_TRUE(final_fails("c=biws,r=abcT,p=" + proof));  // another nonce
  EXPECT_TRUE(final_fails("c=biws,r=abcS,p=notbase64!"));
  EXPECT_TRUE(final_fails("c=biws,r=abcS,p=" + Base64Encode("short")));
}

// RFC 7677's example from the client's side: the same messages, byte for byte.
TEST(ScramClientTest, Rfc7677Sha256ConversationAsTheClient) {
  ScramClient client(ScramMechanism::kSha256, "user", "pencil");
  client.SetClientNonceForTest("rOprNGfwEbeRWgbNEkqO");
  EXPECT_EQ(client.First(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  auto final_message = client.Final(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
  ASSERT_TRUE(final_message.ok()) << final_message.status().ToString();
  EXPECT_EQ(final_message.value(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_TRUE(client.Verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").ok());
  EXPECT_EQ(client.Verify("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").code(),
            ErrorCode::kAuthenticationFailed);
}

// Against the server's side: the same key authenticates both ways; another key does not.
TEST(ScramClientTest, TalksToTheServerAndFailsWithAnotherKey) {
  auto creds = MakeScramCredentials(ScramMechanism::kSha256, "__system", "thekey123", 4096);
  ASSERT_TRUE(creds.ok());
  auto lookup = [&](const std::string& user) -> StatusWith<std::optional<ScramCredentials>> {
    if (user != "__system") return std::optional<ScramCredentials>();
    return std::optional<ScramCredentials>(creds.value());
  };
  for (const char* key : {"thekey123", "otherkey9"}) {
    ScramClient client(ScramMechanism::kSha256, "__system", key);
    ScramConversation server(ScramMechanism::kSha256, true);
    auto first = server.Step(client.First(), lookup);
    ASSERT_TRUE(first.ok());
    auto final_message = client.Final(first.value().payload);
    ASSERT_TRUE(final_message.ok());
    auto done = server.Step(final_message.value(), lookup);
    if (std::string_view(key) == "thekey123") {
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      EXPECT_TRUE(server.authenticated());
      EXPECT_TRUE(client.Verify(done.value().payload).ok());
    } else {
      EXPECT_EQ(done.status().code(), ErrorCode::kAuthenticationFailed);
    }
  }
  // A server whose nonce does not extend the client's is refused.
  ScramClient client(ScramMechanism::kSha256, "__system", "thekey123");
  client.First();
  EXPECT_EQ(client.Final("r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096").status().code(),
            ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::auth
