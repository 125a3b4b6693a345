"""Hand-written word lists, all in *folded* form (see ``nlp.normalize.fold``).

Kept as data in one place so reviewers can read the linguistic decisions.
"""

from __future__ import annotations

__all__ = [
    "DIALECT_FUNCTION_WORDS",
    "ENGLISH_STOPWORDS",
    "FINAL_ALEF_KEPT",
    "NEVER_SPLIT",
    "REQUEST_WORDS",
    "SHORT_WORDS",
    "STEM_KEPT",
    "STOPWORDS",
]

# Two-letter words that may remain after a clitic is split off (و+هو، ب+ده،
# ف+يه → في+ه is handled as في + enclitic).  Anything else needs ≥ 3 letters.
SHORT_WORDS: frozenset[str] = frozenset(
    """هو هي هم هن في من عن مع ما لا لم لن قد ان او يا كل بس ده دي دا دول
    شو وش مش مو اي ذا ذي لي له لك لها كم كي ثم حد بعد لو هل""".split()
)

# Whole words whose first/last letters only look like clitics.  Without a
# dictionary these are the high-frequency false splits found on
# ../shared/data (ARCD passages and dialect tweets) and in the issue.
NEVER_SPLIT: frozenset[str] = frozenset(
    """والد والده والدي والدين والدتي والي والا واله ولد ولاد اولاد والله
    وزير وزاره وزراء وقت وطن وطني وجه وضع واحد واحده وسط وصل وصول وراء ورق
    وحده ودي وين وجود ولايه ولايات وكاله وثيقه وظيفه ورد وادي واقع واضح
    فيل فيلم فيلا فيه فيها فيهم فيك فيني فين فوق فلسطين فرنسا فيسبوك فيديو
    فكره فريق فرق فصل فقط فترة فتره فعلا فعل فرح فرصه فلوس فندق
    بلد بلاد بنت بنات بنك بيت بيوت بيروت باب بابا بحر برنامج بحث بطل بطاقه
    بطن بعض بكره بكرا بلش بدي بدك بدو بدها بدنا بيع بدل بس بسيط بشر بيان
    باقه باقي بنزين بالك بره برا بتاع بتاعي بتاعك بتاعتي
    كلب كلام كلمه كلمات كتاب كتب كبير كثير كتير كمان كده كدا كيف كيفك كيفاش
    كيس كرسي كانت كان كنت كنا كرة كره كافي كامل كليه كلها كلهم كويس
    لبنان ليبيا لندن لعب لعبه لون لحم ليل ليله ليش ليه لسه لازم لكن لقاء لجنه
    لغه لحظه لحد لما لين
    هيك هيئه هلا هنا هناك هذا هذه هذي هاد هادا هادي هدول
    حياه حيوان حيث حتي حاجه حاجات حلو حبيبي حبيبتي حكي
    عيد عيني عيون عيال عليه عليها عليك علينا عليهم عندي عندك عنده عندها عندنا
    اللي الله الذي التي الذين اللذين اللتين اللاتي اللواتي الان
    بدا بلا بعد بعدين بعيد بعيدا بين بينما بيناتنا بنادم باين باينه بده بلي بتاتا
    بغيت بغيتي بغيتو بغينا بقالي بقالك بقالنا بقي بطوله بطاله بطاطا بطاطس
    بندوره برميل بلديه بيانات براءه بشويش برشلونه باي بلييز
    لدي وفقا عندما كانوا كانون بدايه بدلا بريطانيا باريس
    يعني امي ابي اخي اختي اني انه انها انك انا احنا انتي انتو""".split()
)

# Nouns (mostly loans) whose ending only looks like a light10 suffix (‑ون، ‑ين،
# ‑يه) or whose first letter only looks like ب/ل: the search stemmer keeps them
# whole, in every form it reaches them (التلفون، تلفونات، مليونا).  Each one
# stemmed into another word of the support trade: تلفون → تلف (damage), كرتون →
# كرت (card), كوبون → كوب (cup), زيتون → زيت (oil), عربون → عرب (Arab),
# مليون → ملي, روتين/بروتين → روت, بالون → ون, لاين → اين (a stopword).
STEM_KEPT: frozenset[str] = frozenset(
    """تلفون تليفون ايفون ميكروفون مايكروفون تلفزيون صالون بنطلون بنطلونات قانون
    زيتون ليمون صابون مليون عربون كرتون كارتون بالون كوبون روتين بروتين فيتامين
    سيليكون ماكينه لاين اونلاين اوفلاين""".split()
)

# Words whose final ا is part of the word, not tanween fatha: the search
# stemmer keeps it (دنيا must not become دني "lowly", عليا not علي).  ى-final
# words (ذكرى) are ي after folding and never reach the rule.
FINAL_ALEF_KEPT: frozenset[str] = frozenset(
    """دنيا عليا امريكا هذا""".split()
)

# Stopwords: MSA function words plus the commonest dialect particles and
# pronouns.  Question words are included (متي، كم، ماذا) because in retrieval
# they carry no topic; content-bearing dialect words (عايز، بدي) are not.
_MSA = """في من الي علي عن مع هذا هذه ذلك تلك هؤلاء اولئك الذي التي الذين اللذين
اللتين اللواتي اللاتي هو هي هم هن هما انا انت انتم نحن ما ماذا لماذا متي اين
كيف كم هل لا لم لن ليس ليست قد لقد كان كانت كانوا يكون تكون ان او ام ثم حتي كل
بعض غير بعد قبل عند عندما بين حيث لكن بل اذا اذ اما الا اي ايضا منذ خلال حول ضد
دون نحو لدي لدى لها له لهم به بها بهم فيه فيها فيهم منه منها منهم عليه عليها
عنه عنها الذى اللذان يا و ف ب ك ل تم هناك هنا كما مثل وقد وهو وهي وكان ولا ولم
ومن وفي وان او اي""".split()
_DIALECT = """اللي اللى الي مش مو مب ماش شو ايش وش شنو شنهو ليش ليه ليه شلون كيف
هيك كده كدا كذا كدة هيك هاد هادا هادي هاذا هذي هدول دول ده دي دا يعني بس عشان
علشان لانه لان عشانك احنا احنا انتو انتوا انتي اني هوه هيه همه منو مين ايه اش
واش فين وين وينك هلق هلا هسه هسع توا دابا راح رح حا عم قاعد اكو ماكو كاين كاينه يلا طيب
اوك ok ال""".split()  # ال: Arabizi "el" written apart from its noun
# Question words written glued or in dialect spelling: ماهي/ماهى (ما هي; ى is
# ي after folding) was stemmed to ماه and ماهو kept whole, so ~7% of ARCD
# questions carried a function word as a search key.  Maghrebi/Levantine/
# Egyptian forms from ../shared/data dialect tweets.
_QUESTION = """ماهي ماهو ماهيه ماهم منهو امتي كام كيفاش علاش اشنو شكون منين قديش
قداش""".split()
STOPWORDS: frozenset[str] = frozenset(_MSA) | frozenset(_DIALECT) | frozenset(_QUESTION)

# Words that say *how* a customer asks, not *what* (ابي/ابغي "I want", ممكن
# "could you", عندي "I have", dialect possessives تبعي/ديالي/مالتي, fillers
# خالص/بزاف): matching a question to an answer sentence or a tool example
# ignores them (``nlp.keys.content_keys``).  They are NOT retrieval stopwords:
# in MSA ابي is "my father", عام "year", حق "right", and BM25 already
# discounts frequent words, so dropping them from the index would lose
# matches.  Disjoint from STOPWORDS; matching drops the union of both.
REQUEST_WORDS: frozenset[str] = frozenset(
    """اريد اسوي اصلا اعمل اقدر ازاي ابغي ابي اشلون الحين امتا اوكي باش بتاع بتاعك
    بتاعكم بتاعي بدي برضه برضو بزاف بعدين بغيت بكام بكم بيصير تبع تبعك تبعكم تبعي
    حد حق حقك حقكم حقي خالص دلوقتي ديال ديالك ديالكم ديالي دير زي سمحت سنه شحال
    شنوه شوي شويه شي صار صارت طب عافاك عام عاوز عايز عدكم عندك عندكم عندنا عندي
    غادي فضلك فوقاش قديه كمان لازم لك لكم لو لي مالتك مالتكم مالتي مالي ممكن نبغي
    ندير نسوي نعمل هاي هكا هيدا هيدي هيكا ياخي يلي""".split()
) - STOPWORDS

# Dialect function words, fillers and greetings that are no retrieval stopword
# (an MSA text may hold the homograph: ابي "my father", زي "uniform", لازم
# "necessary", يعني "means"), yet in a customer's question say how they ask,
# not what about.  Search keeps them as query terms at the bridge's weight
# (memory.expansion), not the full weight of the customer's content words,
# while the bridge supplies their MSA meaning (بدي → أريد, عشان → لأن): «بدي
# سكر الحساب» must be ranked by «سكر الحساب», not by a document that happens
# to say بدي.  The index is unchanged (no re-key).  Folded forms, after
# proclitics; REQUEST_WORDS less the content words عام، سنه، حد (year, limit).
_FILLERS = """ابغا ابغى بغينا بدنا بدك بدو بدها عايزه عاوزه عايزين حابب حابه ودي ودنا
نحب نبغي بغيت بغيتي تبغي تبي نبي يبي اكيد يعني طيب ياريت والله بليز لوسمحت مشكور
مشكورين يعطيك العافيه عافيه مرحبا اهلا هلا سلام عليكم الله خيي خيو خويا حبيبي
اخوي اخي عمي حجي استاذ يا ريت برضه برضو كمان بعد زي زيي متل مثلا كيفك شلونك
ازيك لو سمحتي سمحتو هلق هسا هسه دلوقتي دابا توا عاد ترا ترى""".split()
DIALECT_FUNCTION_WORDS: frozenset[str] = (
    (REQUEST_WORDS - frozenset({"عام", "سنه", "حد"})) | frozenset(_FILLERS)
) - STOPWORDS

# English function words, for Latin-script (non-Arabizi) words in search keys:
# code-switched support messages ("my router is down") should be indexed by
# router/down, not my/is.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """a an the is are was were be been being am to of and or in on at for with
    by from as it its this that these those i me my you your he she we our they
    their them his her not no do does did have has had will would can could
    please hi hello thanks thank ok okay""".split()
)
