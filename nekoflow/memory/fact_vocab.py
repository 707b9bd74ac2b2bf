# ruff: noqa: E501  (word lists and regular expressions: one entry per line reads best)
"""The words the fact rules know: pet species, family relations, jobs, shifts, time
expressions (Chinese and English), mapped to the slot names they give. Pure data."""

from __future__ import annotations

CJK = r"\u4e00-\u9fff"

SPECIES_CN = {
    "猫咪": "cat", "小猫": "cat", "猫": "cat", "狗狗": "dog", "小狗": "dog", "狗": "dog",
    "兔子": "rabbit", "兔兔": "rabbit", "仓鼠": "hamster", "鹦鹉": "parrot", "金鱼": "fish",
    "乌龟": "turtle", "小鸟": "bird", "鸟": "bird", "猫猫": "cat", "橘猫": "cat",
    "狸花猫": "cat", "三花猫": "cat", "三花": "cat", "布偶猫": "cat", "布偶": "cat",
    "英短": "cat", "美短": "cat", "暹罗猫": "cat", "蓝猫": "cat", "金毛": "dog", "柯基": "dog",
    "泰迪": "dog", "哈士奇": "dog", "柴犬": "dog", "萨摩耶": "dog", "边牧": "dog",
    "拉布拉多": "dog", "比熊": "dog", "博美": "dog", "狗子": "dog", "二哈": "dog", "德牧": "dog",
    "法斗": "dog", "雪纳瑞": "dog", "银渐层": "cat", "金渐层": "cat", "加菲猫": "cat",
    "缅因猫": "cat", "狸花": "cat", "奶牛猫": "cat", "黑猫": "cat", "白猫": "cat",
    "垂耳兔": "rabbit", "侏儒兔": "rabbit", "荷兰猪": "hamster", "金丝熊": "hamster",
    "猫主子": "cat", "暹罗": "cat",
}  # fmt: skip
BREEDS_CN = {
    breed: SPECIES_CN[breed]
    for breed in ("橘猫", "狸花猫", "狸花", "三花猫", "三花", "布偶猫", "布偶", "英短", "美短",
                  "暹罗猫", "蓝猫", "银渐层", "金渐层", "加菲猫", "缅因猫", "奶牛猫", "金毛",
                  "柯基", "泰迪", "哈士奇", "二哈", "柴犬", "萨摩耶", "边牧", "拉布拉多", "比熊",
                  "博美", "德牧", "法斗", "雪纳瑞", "垂耳兔", "侏儒兔", "金丝熊", "暹罗")
}  # fmt: skip
"""The species words that name a breed (or a coat): a pet's breed, not only its species."""
SPECIES_EN = {
    "cat": "cat", "kitten": "cat", "kitty": "cat", "dog": "dog", "puppy": "dog", "pup": "dog",
    "doggo": "dog", "rabbit": "rabbit", "bunny": "rabbit", "hamster": "hamster",
    "parrot": "parrot", "fish": "fish", "turtle": "turtle", "bird": "bird",
    # breeds name the species ("a beagle named Biscuit")
    "beagle": "dog", "corgi": "dog", "poodle": "dog", "labrador": "dog", "husky": "dog",
    "golden retriever": "dog", "retriever": "dog", "shiba": "dog", "shiba inu": "dog",
    "pug": "dog", "dachshund": "dog", "chihuahua": "dog", "terrier": "dog", "collie": "dog",
    "border collie": "dog", "bulldog": "dog", "schnauzer": "dog", "samoyed": "dog",
    "spaniel": "dog", "pomeranian": "dog", "tabby": "cat", "ragdoll": "cat", "siamese": "cat",
    "maine coon": "cat", "sphynx": "cat", "parakeet": "bird", "budgie": "bird",
    "cockatiel": "bird", "german shepherd": "dog", "shih tzu": "dog", "french bulldog": "dog",
    "frenchie": "dog", "persian": "cat", "british shorthair": "cat", "lab": "dog",
    "lop": "rabbit", "guinea pig": "hamster",
}  # fmt: skip
BREEDS_EN = {
    breed: SPECIES_EN[breed]
    for breed in SPECIES_EN
    if SPECIES_EN[breed] in ("cat", "dog") and breed not in (
        "cat", "kitten", "kitty", "dog", "puppy", "pup", "doggo")
}  # fmt: skip
"""The English species words that name a breed."""
RELATION_CN = {
    "妈妈": "mother", "老妈": "mother", "母亲": "mother", "妈": "mother", "爸爸": "father",
    "老爸": "father", "父亲": "father", "爸": "father", "姐姐": "sister", "妹妹": "sister",
    "哥哥": "brother", "弟弟": "brother", "老婆": "wife", "妻子": "wife", "老公": "husband",
    "丈夫": "husband", "儿子": "son", "女儿": "daughter", "女朋友": "girlfriend",
    "女友": "girlfriend", "男朋友": "boyfriend", "男友": "boyfriend", "奶奶": "grandma",
    "外婆": "grandma", "姥姥": "grandma", "爷爷": "grandpa", "外公": "grandpa", "姥爷": "grandpa",
    "室友": "roommate", "闺蜜": "best friend", "姐": "sister", "妹": "sister", "哥": "brother",
    "弟": "brother", "老弟": "brother", "老哥": "brother", "老姐": "sister", "闺女": "daughter",
    "媳妇": "wife", "媳妇儿": "wife", "对象": "partner", "爱人": "partner", "爸妈": "parents",
    "父母": "parents", "家里人": "family", "爹": "father", "老爹": "father", "表姐": "cousin",
    "表妹": "cousin", "表哥": "cousin", "表弟": "cousin", "堂哥": "cousin", "堂姐": "cousin",
    "堂弟": "cousin", "堂妹": "cousin", "舅舅": "uncle", "叔叔": "uncle", "伯伯": "uncle",
    "姑姑": "aunt", "姨妈": "aunt", "小姨": "aunt",
}  # fmt: skip
RELATION_EN = {
    "mom": "mother", "mum": "mother", "mother": "mother", "dad": "father", "father": "father",
    "sister": "sister", "sis": "sister", "brother": "brother", "bro": "brother", "wife": "wife",
    "husband": "husband", "son": "son", "daughter": "daughter", "girlfriend": "girlfriend",
    "gf": "girlfriend", "boyfriend": "boyfriend", "bf": "boyfriend", "grandma": "grandma",
    "grandmother": "grandma", "grandpa": "grandpa", "grandfather": "grandpa",
    "roommate": "roommate", "best friend": "best friend", "partner": "partner",
    "parents": "parents", "folks": "parents", "son's": "son", "cousin": "cousin",
    "uncle": "uncle", "aunt": "aunt", "auntie": "aunt",
}  # fmt: skip
THINGS_CN = {"兽医": "vet", "医生": "doctor", "牙医": "dentist", "心理医生": "therapist",
              "心理咨询师": "therapist", "咨询师": "therapist", "主治医生": "doctor",
              "室友": "roommate", "老板": "boss", "领导": "boss", "手机": "phone", "车": "car"}  # fmt: skip
THINGS_EN = ("vet", "doctor", "dentist", "therapist", "roommate", "boss", "phone", "car",
              "job", "apartment", "school", "manager", "landlord", "coach")  # fmt: skip
JOBS_EN = (
    "vet tech|dental hygienist|nurse practitioner|teaching assistant|piano teacher|"
    "software engineer|software developer|web developer|engineer|nurse|teacher|doctor|"
    "student|developer|programmer|designer|graphic designer|writer|lawyer|accountant|chef|"
    "cook|barista|cashier|driver|artist|musician|photographer|vet|veterinarian|pharmacist|"
    "firefighter|police officer|cop|scientist|researcher|manager|waiter|waitress|mechanic|"
    "electrician|librarian|translator|streamer|consultant|analyst|intern|data scientist|"
    "paramedic|dentist|professor|tutor|illustrator|animator|game developer|freelancer|"
    "journalist|editor|architect|carpenter|plumber|baker|pilot|flight attendant|soldier|"
    "farmer|secretary|receptionist|salesperson|sales rep|product manager|project manager|"
    "med student|medical student|grad student|phd student|law student|nursing student|"
    "college student|uni student|high school student|social worker|therapist|caregiver|"
    "delivery driver|truck driver|bartender|hairdresser|barber|florist|ux designer|"
    "data analyst|software dev|dev|sysadmin|web designer|youtuber|content creator"
)
GIGS_CN = (
    r"开出租车?|开滴滴|跑滴滴|开网约车|跑外卖|送外卖|送快递|跑快递|开货车|开大车|跑长途|摆摊|开店|"
    r"开奶茶店|开饭店|开小卖部|卖水果|卖菜|种地|做生意|做微商|做自媒体|当主播"
)
"""Work said as what one does ("在郑州开出租车", "我送外卖"): the job is the doing."""
FIELDS_EN = (
    "customer support|customer service|tech support|it support|marketing|sales|accounting|"
    "hr|finance|retail|hospitality|consulting|healthcare|insurance|real estate|logistics"
)
"""Lines of work said as a field ("I work in marketing", "I do customer support")."""
CITIES_CN = (
    "北京|上海|天津|重庆|广州|深圳|杭州|南京|苏州|成都|武汉|西安|长沙|郑州|青岛|大连|厦门|福州|"
    "济南|沈阳|哈尔滨|长春|昆明|贵阳|南宁|合肥|南昌|石家庄|太原|呼和浩特|兰州|西宁|银川|乌鲁木齐|"
    "拉萨|海口|三亚|宁波|温州|无锡|常州|佛山|东莞|珠海|绍兴|嘉兴|金华|台州|徐州|扬州|烟台|"
    "洛阳|桂林|香港|澳门|台北|高雄|东京|大阪|京都|首尔|纽约|伦敦|巴黎|柏林|悉尼|墨尔本|多伦多|"
    "温哥华|新加坡|吉隆坡|曼谷|洛杉矶|旧金山|西雅图|波士顿|芝加哥|日本|韩国|美国|英国|法国|"
    "德国|加拿大|澳洲|澳大利亚|新西兰|国外|老家|农村|乡下|东北|广东|广西|四川|湖南|湖北|河南|"
    "河北|山东|山西|江苏|浙江|福建|江西|安徽|云南|贵州|陕西|甘肃|青海|内蒙古?|新疆|西藏|宁夏|海南|"
    "辽宁|吉林|黑龙江|台湾"
)
"""Places a relative may live or work in, said bare ("我姐在上海工作")."""
JOB_CN = (
    rf"[{CJK}A-Za-z]{{0,4}}(?:工程师|程序员|设计师|护士|医生|老师|教师|警察|律师|会计|记者|作家|"
    r"厨师|司机|学生|店长|经理|主播|画家|歌手|演员|研究生|大学生|高中生|初中生|公务员|工人|"
    r"护工|保安|快递员|外卖员|骑手|兽医|编辑|翻译|销售|前台|客服|运营|产品经理|策划|博士生|消防员|"
    r"军人|农民|厨子|医护|药剂师|会计师|建筑师|律师助理|程序猿|"
    r"实习生|店员|收银员|咖啡师|美甲师|理发师|插画师|UP主|up主|自由职业者|校长|教授|主任|园长|"
    r"大夫|牙医|药师|保姆|保洁|清洁工|电工|木匠|裁缝|导游|空姐|空乘|飞行员|模特|网红|HR|hr|人事|"
    r"财务|出纳|行政|文员|助理|摄影师|化妆师|健身教练|教练|外卖小哥|快递小哥|运维|架构师|分析师|"
    r"研究员|医学生|个体户|老板娘|宝妈|全职妈妈|家庭主妇|幼师|辅警|法官|检察官|村官|社工|"
    r"intern|PM|designer|engineer|developer|analyst|programmer)"
)
SHIFTS_CN = (
    r"大夜班|小夜班|夜班|早班|晚班|白班|中班|三班倒|两班倒|大夜|小夜|倒班|朝九晚五|朝九晚六|"
    r"朝[七八九十]晚[三四五六七八九]|996|955|007|大小周|单休|双休|早八|晚八"
)
SHIFTS_EN = (
    r"night shifts?|the night shift|day shifts?|the day shift|early shifts?|late shifts?|"
    r"evening shifts?|graveyard shifts?|nights|weekends|double shifts|\d{1,2}[- ]hour shifts?|"
    r"9[- ]?to[- ]?5|nine[- ]to[- ]five|(?:\d|four|three|five) days on,? (?:\d|three|four|two) off"
)
_DAY_CN = r"(?:\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])[号日]"
_MONTH_CN = r"(?:\d{1,2}|十[一二]?|[一二三四五六七八九])月份?"
TIME_CN = (
    r"(?:明天|后天|大后天|今晚|今天晚上|今天下午|今天|这周[一二三四五六日天末]|下周[一二三四五六日天末]?|"
    r"下个?星期[一二三四五六日天]?|下个?礼拜[一二三四五六日天]?|"
    rf"下个月(?:{_DAY_CN}|初|中|底)?|(?:明年|今年)(?:{_MONTH_CN}(?:{_DAY_CN}|初|中|底)?)?|"
    r"周[一二三四五六日末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|月底|年底|接下来|过几天|"
    r"过两天|改天|这个?周末|寒假|暑假|国庆|春节|过年|五一|元旦|下学期|毕业后|"
    rf"{_MONTH_CN}{_DAY_CN}|{_MONTH_CN}(?:初|中|底)?|{_DAY_CN})(?:上午|下午|晚上|早上|中午|傍晚)?"
)
TIME_EN = (
    r"(?:(?:next|this) )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"week|weekend|month|year)(?: (?:morning|afternoon|evening|night))?|tomorrow(?: (?:morning|"
    r"afternoon|evening|night))?|tmrw|tmr|tomorow|2morrow|tonight|later today|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2}(?:st|nd|rd|th)?|"
    # a month alone (not "may": a verb far more often), a season
    r"in (?:a|one|two|three|four|a few|\d+) (?:days?|weeks?|months?)|"
    r"(?:early |late |mid-?)?(?:january|february|march|april|june|july|august|september|october|"
    r"november|december)|(?:this |next )?(?:spring|summer|autumn|fall|winter)"
)
PAST_CN = (
    r"(?:昨天|前天|上周[一二三四五六日天末]?|上个?星期[一二三四五六日天]?|上个月|去年|刚刚|刚才|"
    r"今天|前几天|前阵子|前段时间|昨晚|今早|今天早上)"
)
PHONES = (
    r"(?:iphone|苹果|华为|小米|红米|oppo|vivo|荣耀|三星|pixel|一加|魅族|realme|galaxy|samsung|"
    r"xiaomi|huawei|oneplus)\s?[\w+]{0,10}(?: (?:pro|max|plus|ultra|mini|\d{1,2}))?"
)
"""A phone said by its brand and model ("华为Mate60", "iPhone15", "pixel 8")."""
FESTIVALS_CN = (
    r"(?:七夕|元旦|情人节|圣诞节?|平安夜|除夕|大年初一|春节|中秋节?|国庆节?|端午节?|元宵节?|愚人节|"
    r"光棍节|双十一|儿童节|劳动节|教师节|万圣节)"
)
"""Days people are born on and name by the holiday ("我生日是七夕")."""
PAST_EN = (
    r"(?:yesterday|today|tonight|this (?:morning|afternoon|week|month|year)|last (?:night|week|"
    r"month|year|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:a (?:few )?|two |three |\d+ )(?:days?|weeks?|months?) ago|recently|earlier|"
    r"in (?:january|february|march|april|may|june|july|august|september|october|november|december))"
)
"""When something happened, in English ("yesterday", "last week", "two days ago")."""
EVENTS_CN = (
    "考完试|考完|毕业|辞职|离职|裸辞|离婚|结婚|领证|订婚|分手|怀孕|升职|加薪|被裁|失业|退休|"
    "戒烟|戒酒|拿到驾照|考过|考上|上岸|出院|住院|做手术|做了手术|骨折|崴了脚|脚崴|入职|转正|"
    "被[\u4e00-\u9fff]{1,4}?(?:骂|批评|表扬|夸|裁|开除|辞退)|摔了一跤|摔倒|考完[\u4e00-\u9fff]{1,4}?|手机摔碎|手机摔坏|手机丢了|钱包丢了|手机坏了|摔碎|摔坏|换工作|换了工作|跳槽|找到工作|找到了工作|考完四级|考完六级|过了四级|过了六级|挂科|搬家|把脚崴|把腰闪|扭伤|摔伤|摔断|生病|感冒|发烧|中奖|买房|买车|提车|求婚|脱单|生了|生娃|出国|回国"
)
"""Things that happen to someone, said bare ("我辞职了", "上周刚领证了")."""
EVENTS_EN = (
    r"got (?:engaged|married|divorced|promoted|fired|laid off|dumped|a raise|hired|accepted)|"
    r"started (?:a |my )?new job(?: as (?:a |an )?[a-z ]{2,30}?)?|"
    r"broke (?:up|my [a-z]+)|passed my [a-z ]{2,20}?|failed my [a-z ]{2,20}?|finished my [a-z]{2,20}|"
    r"graduated|quit my job|lost my job|retired|moved out|had (?:a |my )?[a-z]{0,12} ?surgery|"
    r"had a baby|proposed|bought a (?:house|car|flat|apartment)|"
    r"sprained my [a-z]+|tested positive|got covid|got sick"
)
"""Things that happen to someone, in English ("got engaged", "broke my arm")."""
